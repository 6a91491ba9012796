package idempotency_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// proxyEcho is what a proxy's error page may echo of the request (a
// header, the key) or carry of anything else: never quoted in an error.
const proxyEcho = "Authorization: Bearer " + fakeStripeKey + " jane.doe@example.com"

// notStripeAnswer is an answer that is not the Stripe API's, as a proxy,
// a load balancer or a gateway between the service and api.stripe.com
// gives when it fails: a page of HTML or text, an empty body, a
// connection closed before the answer or in its middle.
type notStripeAnswer struct {
	name  string
	serve func(w http.ResponseWriter)
	// roundTrip, instead of serve, makes the answer in the client's
	// transport: what a server cannot send at will.
	roundTrip func(r *http.Request) (*http.Response, error)
	transient bool   // a later request may succeed
	says      string // in the error's text, after the operation
}

// proxyPage answers status with an HTML page that echoes the request's
// Authorization header, 64 KiB long.
func proxyPage(status int) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(status)
		_, _ = fmt.Fprintf(w, "<html><head><title>%d %s</title></head><body><h1>%[1]d %[2]s</h1><!-- %s %s --></body></html>",
			status, http.StatusText(status), proxyEcho, strings.Repeat("x", 64<<10))
	}
}

// hijacked writes raw on the connection, then closes it.
func hijacked(raw string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		_, _ = buf.WriteString(raw)
		_ = buf.Flush()
		_ = conn.Close()
	}
}

func notStripeAnswers() []notStripeAnswer {
	text := func(status int, contentType, body string) func(http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			if contentType != "" {
				w.Header().Set("Content-Type", contentType)
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}
	}
	const notStripes = ", not an answer of the Stripe API"
	return []notStripeAnswer{
		{"502 HTML", proxyPage(http.StatusBadGateway), nil, true, "HTTP 502" + notStripes},
		{"503 HTML", proxyPage(http.StatusServiceUnavailable), nil, true, "HTTP 503" + notStripes},
		{"504 HTML", proxyPage(http.StatusGatewayTimeout), nil, true, "HTTP 504" + notStripes},
		{"502 empty", text(http.StatusBadGateway, "", ""), nil, true, "HTTP 502" + notStripes},
		{"503 empty", text(http.StatusServiceUnavailable, "", ""), nil, true, "HTTP 503" + notStripes},
		{"504 empty", text(http.StatusGatewayTimeout, "", ""), nil, true, "HTTP 504" + notStripes},
		{"500 text", text(http.StatusInternalServerError, "text/plain", "Internal Server Error "+proxyEcho), nil, true, "HTTP 500" + notStripes},
		{"429 text", text(http.StatusTooManyRequests, "text/plain", "Too Many Requests "+proxyEcho), nil, true, "HTTP 429" + notStripes},
		// JSON, but not Stripe's error (an API gateway's): stripe-go's
		// error is the body alone, without the status.
		{"502 JSON of a gateway", text(http.StatusBadGateway, "application/json", `{"message":"`+proxyEcho+`"}`), nil, true, "an error answer that is not the Stripe API's"},
		// A proxy's refusal that no later request passes.
		{"403 HTML", proxyPage(http.StatusForbidden), nil, false, "HTTP 403" + notStripes},
		{"200 HTML", proxyPage(http.StatusOK), nil, true, "HTTP 200, an answer stripe-go could not read"},
		{"200 JSON cut short", text(http.StatusOK, "application/json", `{"object":"list","data":[{"id":"evt_1","description":"`+proxyEcho), nil, true,
			"HTTP 200, an answer stripe-go could not read"},
		{"200 connection closed in the body", hijacked("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n" +
			`{"object":"list","data":[{"id":"evt_1","description":"` + proxyEcho), nil, true, "the answer was cut short: unexpected EOF"},
		{"connection closed before the answer", hijacked(""), nil, true, ": EOF"},
		{"200 connection reset in the body", nil, func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Request: r,
				Body: &resetBody{strings.NewReader(`{"object":"list","data":[{"id":"evt_1","description":"` + proxyEcho)}}, nil
		}, true, "the answer was cut short: read tcp: connection reset by peer"},
	}
}

// notStripeServer serves c's answer to the first `failing` requests (every
// request when failing is 0), the rest with next; served counts the
// requests.
func notStripeServer(t *testing.T, c notStripeAnswer, failing int64, next http.Handler) (client *stripe.Client, served func() int64) {
	var atServer, atClient atomic.Int64
	fails := func(n *atomic.Int64) bool { i := n.Add(1); return failing == 0 || i <= failing }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.serve != nil && fails(&atServer) {
			c.serve(w)
			return
		}
		next.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	// A new connection per request: net/http does not send a request
	// again by itself after its first connection closed.
	transport := &http.Transport{DisableKeepAlives: true}
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if c.roundTrip != nil && fails(&atClient) {
			return c.roundTrip(r)
		}
		return transport.RoundTrip(r)
	})}
	return stripe.NewClient(fakeStripeKey, fakeBackends(srv.URL, hc)), func() int64 { return atServer.Load() + atClient.Load() }
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// resetBody is a body whose connection is reset after its first bytes.
type resetBody struct{ first io.Reader }

func (b *resetBody) Read(p []byte) (int, error) {
	if n, _ := b.first.Read(p); n > 0 {
		return n, nil
	}
	return 0, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
}

func (*resetBody) Close() error { return nil }

// requireErrorText checks that err names op and what failed, quotes
// nothing of the answer and stays short.
func requireErrorText(t *testing.T, err error, op string, c notStripeAnswer) {
	t.Helper()
	require.ErrorIs(t, err, idempotency.ErrStripeAPI)
	require.Contains(t, err.Error(), op+": ")
	require.Contains(t, err.Error(), c.says)
	for _, quoted := range []string{fakeStripeKey, "jane.doe", "xxxxxxxx", "<html", "Internal Server Error", "Too Many Requests"} {
		require.NotContains(t, err.Error(), quoted)
	}
	require.Less(t, len(err.Error()), 300, "bounded: %s", err)
}

// TestStripeAPIAnswersNotStripes: an answer that is not the Stripe API's
// (a proxy's 502, 503 or 504 with an HTML page or an empty body, a 500
// or a 429 in plain text, a 200 that is not JSON or is cut short, a
// connection closed) is treated by the package's three callers of the
// API as Stripe's answer of that status is. Recover asks again for a
// page answered so when a later request may succeed, and stops at once at
// a refusal (a proxy's 403); a thin event is answered 503
// stripe_unavailable or 500; Retrieve's error (OnCurrent's fetch) says
// what failed. Each error names the operation, the status and that the
// answer is not the Stripe API's, and quotes nothing of the body. Before,
// Recover stopped at the first request of each (Stripe's JSON 429 and 5xx
// alone were asked again), every error said "an answer stripe-go could
// not read" without the status, and a thin event a proxy refused with a
// 403 was answered 503.
func TestStripeAPIAnswersNotStripes(t *testing.T) {
	t.Parallel()
	for _, c := range notStripeAnswers() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			t.Run("Recover", func(t *testing.T) {
				t.Parallel()
				f := newFakeStripe()
				now := time.Now()
				addPaidEvents(t, f, "proxy", 3, now)
				client, served := notStripeServer(t, c, 1, f)
				app := newService(t, "memory")
				log, logs := testLogger()
				h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{Secrets: []string{testSecret}, Logger: log})
				require.NoError(t, err)
				rep, err := idempotency.RecoverWithBackoff(t.Context(), h, client,
					idempotency.RecoverOptions{Since: now.Add(-2 * time.Hour), RequestsPerSecond: 100}, time.Millisecond)
				if !c.transient {
					requireErrorText(t, err, "listing events", c)
					require.Equal(t, 1, rep.Requests, "not asked again")
					require.Equal(t, int64(1), served())
					return
				}
				require.NoError(t, err)
				calls := f.calls()
				require.Equal(t, len(calls)+1, rep.Requests, "one request answered by the proxy, the rest by the API")
				require.Equal(t, int64(rep.Requests), served())
				require.Empty(t, calls[0].Query.Get("ending_before")+calls[0].Query.Get("starting_after"), "the first page asked for again")
				app.requireAppliedOnce(t, eventIDs("proxy", 3))
				require.Contains(t, logs.String(), "asking again")
				require.Contains(t, logs.String(), c.says)
				require.NotContains(t, logs.String(), "jane.doe")
			})
			t.Run("thin event", func(t *testing.T) {
				t.Parallel()
				app, a, res := deliverThinAnsweredBy(t, c, "evt_thin_proxy")
				if c.transient {
					require.Equal(t, http.StatusServiceUnavailable, a.Status, a.Body)
					require.JSONEq(t, `{"error":"stripe_unavailable"}`, a.Body)
				} else {
					require.Equal(t, http.StatusInternalServerError, a.Status, a.Body)
					require.JSONEq(t, `{"error":"processing_failed"}`, a.Body)
				}
				requireErrorText(t, res.Err, "retrieving the v2 event", c)
				require.Empty(t, app.appliedCounts(t))
			})
			t.Run("Retrieve", func(t *testing.T) {
				t.Parallel()
				client, _ := notStripeServer(t, c, 0, nil)
				_, err := idempotency.Retrieve(client.V1Subscriptions.Retrieve)(t.Context(), "sub_1", "")
				requireErrorText(t, err, "retrieving the object", c)
				require.NotErrorIs(t, err, idempotency.ErrObjectNotFound)
			})
		})
	}
}

// deliverThinAnsweredBy delivers the notification of the thin event id to
// a synchronous Handler of a new service whose StripeClient's every
// request is answered as c says, and returns the service, the answer and
// the delivery's Result.
func deliverThinAnsweredBy(t *testing.T, c notStripeAnswer, id string) (*service, idempotencytest.Answer, idempotency.Result) {
	t.Helper()
	app := newService(t, "memory")
	thinEvents(app)
	client, _ := notStripeServer(t, c, 0, nil)
	var res idempotency.Result
	h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(), StripeClient: client,
		OnResult: func(r idempotency.Result) { res = r },
	})
	require.NoError(t, err)
	notification, _ := thinEvent(id)
	a := idempotencytest.Deliver(h, notification, testSecret)
	return app, a, res
}

// TestRecoverAsksAgainAfterStripeGosRetries: stripe-go retries an answer
// that is not JSON itself (MaxNetworkRetries, 2 by default, 0.375 to 1 s
// apart), within one of Recover's requests; when its retries give up,
// Recover asks again a second later. A proxy that answers 502 three times
// costs one of Recover's requests (four in all), counted once each in
// Requests, and the run finishes. Before, it stopped at the first
// request's error. On testing/synctest's fake clock.
func TestRecoverAsksAgainAfterStripeGosRetries(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStripe()
		now := time.Now()
		addPaidEvents(t, f, "gateway", 3, now)
		var failed []time.Time
		api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if len(failed) < 3 {
				failed = append(failed, time.Now())
				proxyPage(http.StatusBadGateway)(w)
				return
			}
			f.ServeHTTP(w, r)
		})
		app := newService(t, "memory")
		rep, err := app.handler(t).Recover(t.Context(), retryingClient(api), idempotency.RecoverOptions{Since: now.Add(-2 * time.Hour)})
		require.NoError(t, err)
		app.requireAppliedOnce(t, eventIDs("gateway", 3))
		calls := f.calls()
		require.Len(t, failed, 3, "stripe-go's request and its 2 retries")
		require.Equal(t, len(calls)+1, rep.Requests, "Recover's requests: stripe-go's retries are not counted")
		require.Equal(t, time.Second, calls[0].At.Sub(failed[2]), "Recover's backoff, after stripe-go's retries")
	})
}

// proxyOKBody is JSON a proxy may answer 200 with: not the Stripe API's.
var proxyOKBody = []byte(`{"status":"ok","echo":"` + proxyEcho + `"}`)

func proxyOK(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(proxyOKBody)
}

// TestRecoverPageThatIsNotAList: a 200 whose JSON is not a list (a
// proxy's {"status":"ok"}) is not read as an empty last page, which would
// end the run as complete with nothing listed: Recover asks again, and
// when every answer is so it stops with ErrStripeAPI, whose text names
// the status and quotes nothing of the body. Before, the run ended at
// once, Listed 0, without an error.
func TestRecoverPageThatIsNotAList(t *testing.T) {
	t.Parallel()
	ok := notStripeAnswer{name: "200 JSON not a list", serve: proxyOK,
		says: "HTTP 200, not a list of events: JSON of another kind, not the Stripe API's answer"}
	now := time.Now()
	for _, failing := range []int64{1, 0} {
		t.Run(fmt.Sprint("failing ", failing), func(t *testing.T) {
			t.Parallel()
			f := newFakeStripe()
			addPaidEvents(t, f, "notlist", 3, now)
			client, served := notStripeServer(t, ok, failing, f)
			app := newService(t, "memory")
			rep, err := idempotency.RecoverWithBackoff(t.Context(), app.handler(t), client,
				idempotency.RecoverOptions{Since: now.Add(-2 * time.Hour), RequestsPerSecond: 100}, time.Millisecond)
			if failing == 0 {
				requireErrorText(t, err, "listing events", ok)
				require.Equal(t, 6, rep.Requests, "asked again 5 times")
				require.Equal(t, int64(6), served())
				require.Zero(t, rep.Listed)
				return
			}
			require.NoError(t, err)
			require.Equal(t, len(f.calls())+1, rep.Requests)
			app.requireAppliedOnce(t, eventIDs("notlist", 3))
		})
	}
}

// TestRetrieveObjectWithoutID: a 200 whose JSON is not an object of the
// Stripe API (a proxy's {"status":"ok"}, which stripe-go decodes into an
// object with every field empty) fails Retrieve's fetch with ErrStripeAPI
// naming the status, and OnCurrent's handler does not run: it would
// write the state of an object without an id; the delivery is answered
// 503 stripe_unavailable, as for any answer Retrieve could not read.
// Before, Retrieve returned that empty object without an error.
func TestRetrieveObjectWithoutID(t *testing.T) {
	t.Parallel()
	ok := notStripeAnswer{name: "200 JSON not an object", serve: proxyOK,
		says: "HTTP 200, not an object of the Stripe API: JSON without an id"}
	client, _ := notStripeServer(t, ok, 0, nil)
	fetch := idempotency.Retrieve(client.V1Subscriptions.Retrieve)
	sub, err := fetch(t.Context(), "sub_1", "")
	requireErrorText(t, err, "retrieving the object", ok)
	require.Nil(t, sub)

	a, res, _, ran := deliverRefusedFetch(t, http.StatusOK, proxyOKBody, fixture(t, "customer.subscription.updated"))
	require.Equal(t, http.StatusServiceUnavailable, a.Status, a.Body)
	require.False(t, ran, "the handler is not given an object without an id")
	requireErrorText(t, res.Err, "retrieving the object", ok)
}
