package idempotencytest

import (
	"net/http"
	"net/http/httptest"

	"github.com/stripe/stripe-go/v82"
)

// NewStripeClient returns a stripe-go client with API key key whose every
// request h serves in the process, without a network: a fake of the Stripe
// API for the code under test, as Config.StripeClient (h a [V2Events]) or
// behind idempotency.Retrieve. The key's prefix is what Config.Mode checks
// of a StripeClient (sk_test_ for idempotency.ModeTest); h sees it in the
// Authorization header.
//
// The client makes no retries of stripe-go's own and logs nothing, so that
// an error answer reaches the caller at once and once. Each request is
// served on a goroutine of its own; one whose context ends before h
// answers returns the context's error, as over a network, and h's request
// has that context.
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
	answered := make(chan *http.Response, 1)
	go func() {
		rec := httptest.NewRecorder()
		t.h.ServeHTTP(rec, req)
		_ = req.Body.Close() // a RoundTripper closes the request's body
		answered <- rec.Result()
	}()
	select {
	case res := <-answered:
		res.Request = r
		return res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
