package idempotencytest

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/stripe/stripe-go/v82"
)

// NewStripeClient returns a stripe-go client with API key key whose every
// request h serves in the process, without a network: a fake of the Stripe
// API for the code under test, as Config.StripeClient (h a [V2Events]),
// as the client of idempotency.Handler.Recover (h a [V1Events]) or behind
// idempotency.Retrieve. The key's prefix is what Config.Mode checks of a
// StripeClient, and of Recover's client (sk_test_ for
// idempotency.ModeTest); h sees it in the Authorization header.
//
// The client makes no retries of stripe-go's own and logs nothing, so that
// an error answer reaches the caller at once and once. Each request is
// served on a goroutine of its own; one whose context ends before h
// answers returns the context's error, as over a network, and h's request
// has that context. A request whose h panics, or ends its goroutine with
// runtime.Goexit (t.FailNow, as require does in a failed assertion),
// fails at once with an error that says so, with the panic's value, as
// one a server drops the connection of.
//
// It panics on a nil h.
func NewStripeClient(key string, h http.Handler) *stripe.Client {
	if h == nil {
		panic("idempotencytest: NewStripeClient: nil http.Handler")
	}
	return stripe.NewClient(key, stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		// Not dialled: the transport hands each request to h.
		URL:               stripe.String("https://api.stripe.com"),
		HTTPClient:        &http.Client{Transport: handlerTransport{h}},
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})))
}

// handlerTransport is an http.RoundTripper that serves each request with
// an http.Handler.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	req := r.Clone(ctx)
	req.RequestURI = req.URL.RequestURI()
	if req.Body == nil {
		req.Body = http.NoBody
	}
	type answer struct {
		res *http.Response
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		rec, returned := httptest.NewRecorder(), false
		defer func() {
			_ = req.Body.Close() // a RoundTripper closes the request's body
			if returned {
				answered <- answer{res: rec.Result()}
				return
			}
			// A panic, or runtime.Goexit (t.FailNow): a server drops the
			// connection, and the request fails at once.
			what := "did not return serving %s %s (runtime.Goexit: t.FailNow in the handler?)"
			args := []any{req.Method, req.URL.Path}
			if v := recover(); v != nil {
				what = "panicked serving %s %s: %v"
				args = append(args, v)
			}
			answered <- answer{err: fmt.Errorf("idempotencytest: the handler of NewStripeClient "+what, args...)}
		}()
		t.h.ServeHTTP(rec, req)
		returned = true
	}()
	select {
	case a := <-answered:
		if a.err != nil {
			return nil, a.err
		}
		a.res.Request = r
		return a.res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// WriteStripeError writes the answer the Stripe API fails a request with:
// status, Stripe's JSON error ({"error":{"type":...,"code":...,
// "message":...}}) of code (none when empty) and message, and a
// Request-Id header (req_ and 14 letters or digits, one per answer,
// unless the handler set one on w), as stripe-go reads them into a
// *stripe.Error (HTTPStatusCode, Type, Code, Msg, RequestID; the Handler's
// errors quote its request id as "request req_..."). Its type is Stripe's
// for the status: "card_error" for 402 (a *stripe.CardError; give its
// code, such as "card_declined"), "api_error" for a 5xx, and
// "invalid_request_error" otherwise (400, 401, 403, 404, 409, 429, as
// Stripe answers a rate limit). A v2 request's error (a [V2Events]'
// fetch) has the same shape in Stripe's v2 API, which stripe-go reads as a
// *stripe.V2RawError of its type, code and message. Call it from a
// handler of [NewStripeClient] that serves a [V1Events], a [V2Events] or
// a fake of your own, to fail the requests a test chooses as Stripe does:
// a rate limit (http.StatusTooManyRequests, code "rate_limit"), an error
// of Stripe's (http.StatusInternalServerError), a key refused
// (http.StatusUnauthorized, no code). It panics on a status that is not
// 4xx or 5xx.
func WriteStripeError(w http.ResponseWriter, status int, code, message string) {
	if status < 400 || status > 599 {
		panic(fmt.Sprintf("idempotencytest: WriteStripeError: status %d is not an error's (4xx or 5xx)", status))
	}
	typ := "invalid_request_error"
	switch {
	case status >= 500:
		typ = "api_error"
	case status == http.StatusPaymentRequired:
		typ = "card_error"
	}
	writeAnswer(w, status, stripeErrorBody(typ, code, message))
}
