package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// gatewayDown answers every request 503 with a gateway's HTML page: an
// answer stripe-go retries (MaxNetworkRetries, 2 by default), sleeping
// 0.375 to 0.5 s before the first retry.
type gatewayDown struct{ requests atomic.Int64 }

func (g *gatewayDown) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.requests.Add(1)
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte("<html><body>503 Service Temporarily Unavailable</body></html>"))
}

// ctxTransport serves requests with h, in process, and fails one whose
// context is done without serving it, as net/http's transport does.
type ctxTransport struct{ h http.Handler }

func (t ctxTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// retryingClient is a client of h with stripe-go's default retries.
func retryingClient(h http.Handler) *stripe.Client {
	return stripe.NewClient(fakeStripeKey, stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL: stripe.String("http://stripe.fake"), HTTPClient: &http.Client{Transport: ctxTransport{h}},
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
	})))
}

// TestStripeCallsDoNotOutwaitTheirContext: stripe-go sleeps between its
// retries without watching the request's context. A call the package
// makes (a thin event's fetch, Retrieve's, Recover's) returns when its
// context ends,
// not after stripe-go's sleep: a thin event answers 503 at
// Config.Timeout, and an OnCurrent fetch fails at the handler's deadline.
// On the fake clock of a synctest bubble.
func TestStripeCallsDoNotOutwaitTheirContext(t *testing.T) {
	t.Parallel()
	const timeout = 100 * time.Millisecond
	t.Run("thin event", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			api := &gatewayDown{}
			hs := idempotency.NewHandlers()
			idempotency.On(hs, thinType, func(context.Context, idempotency.Tx, idempotency.Event[stripe.V1BillingMeterErrorReportTriggeredEventData]) error {
				return nil
			})
			h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
				Secrets: []string{testSecret}, Logger: discardLogger(), Timeout: timeout, StripeClient: retryingClient(api),
			})
			require.NoError(t, err)
			notification, _ := thinEvent("evt_thin_retry")
			start := time.Now()
			a := idempotencytest.Deliver(h, notification, testSecret)
			require.Equal(t, http.StatusServiceUnavailable, a.Status, a.Body)
			require.LessOrEqual(t, time.Since(start), timeout, "answered at Config.Timeout, not after stripe-go's retry sleep")
			time.Sleep(time.Second) // the bubble's clock past stripe-go's sleep: its goroutine ends
			require.Equal(t, int64(1), api.requests.Load(), "the retry fails on the done context")
		})
	})
	t.Run("Recover", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			api := &gatewayDown{}
			app := newService(t, "memory")
			ctx, cancel := context.WithTimeout(t.Context(), timeout)
			defer cancel()
			start := time.Now()
			_, err := app.handler(t).Recover(ctx, retryingClient(api), idempotency.RecoverOptions{Since: start.Add(-time.Hour)})
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.LessOrEqual(t, time.Since(start), timeout, "returned at its deadline, not after stripe-go's retry sleep")
			time.Sleep(time.Second)
			require.Equal(t, int64(1), api.requests.Load())
		})
	})
	t.Run("Retrieve", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			api := &gatewayDown{}
			fetch := idempotency.Retrieve(retryingClient(api).V1Subscriptions.Retrieve)
			ctx, cancel := context.WithTimeout(t.Context(), timeout)
			defer cancel()
			start := time.Now()
			_, err := fetch(ctx, "sub_1", "")
			require.ErrorIs(t, err, idempotency.ErrStripeAPI)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.LessOrEqual(t, time.Since(start), timeout, "failed at its deadline, not after stripe-go's retry sleep")
			time.Sleep(time.Second)
			require.Equal(t, int64(1), api.requests.Load())
		})
	})
}
