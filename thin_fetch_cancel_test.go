package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// hangingAPI says on started that a request reached it, then answers
// nothing until the request's context ends.
type hangingAPI struct{ started chan struct{} }

func (a hangingAPI) RoundTrip(r *http.Request) (*http.Response, error) {
	a.started <- struct{}{}
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// TestThinEventFetchEndsWhenTheSenderHangsUp: a sender that hangs up
// while a thin event's event is being fetched (its request's context
// cancelled) ends the fetch at once, not at Config.Timeout: the delivery
// is answered 503, reported failed with context.Canceled, and nothing is
// applied; Stripe sends the event again. On the fake clock of a synctest
// bubble, with a Timeout of an hour that only the cancellation can cut
// short (no test failed when the fetch ran on a context without the
// request's cancellation).
func TestThinEventFetchEndsWhenTheSenderHangsUp(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		api := hangingAPI{started: make(chan struct{})}
		hs := idempotency.NewHandlers()
		applied := 0
		idempotency.On(hs, thinType, func(context.Context, idempotency.Tx, idempotency.Event[stripe.V1BillingMeterErrorReportTriggeredEventData]) error {
			applied++
			return nil
		})
		var res idempotency.Result
		h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
			Secrets: []string{testSecret}, Logger: discardLogger(), Timeout: time.Hour,
			StripeClient: stripe.NewClient(fakeStripeKey, fakeBackends("http://stripe.fake", &http.Client{Transport: api})),
			OnResult:     func(r idempotency.Result) { res = r },
		})
		require.NoError(t, err)

		notification, _ := thinEvent("evt_thin_hang_up")
		ctx, hangUp := context.WithCancel(t.Context())
		req := idempotencytest.NewSignedRequest("/", notification, testSecret).WithContext(ctx)
		rec := httptest.NewRecorder()
		answered := make(chan struct{})
		start := time.Now()
		go func() {
			defer close(answered)
			h.ServeHTTP(rec, req)
		}()
		<-api.started
		hangUp()
		<-answered

		require.Zero(t, time.Since(start), "the fetch ends when the request's context does, not at Config.Timeout")
		require.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
		require.Equal(t, idempotency.OutcomeFailed, res.Outcome)
		require.ErrorIs(t, res.Err, context.Canceled)
		require.Zero(t, applied)
	})
}
