package idempotency_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestThinEventAnswerIsBoundedByTwiceTimeout: a thin event's answer is two
// steps one after the other, each within Config.Timeout: the fetch of its
// event, then the claim and the handler. A fetch that answers just before
// its Timeout leaves the handler a whole Timeout of its own, so the answer
// takes up to twice Timeout, as Config.Timeout says, and no longer. On the
// fake clock of a synctest bubble: the API answers after 0.9 Timeout, and
// the handler, which waits for its context, is cancelled Timeout later.
func TestThinEventAnswerIsBoundedByTwiceTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const timeout = 10 * time.Second
		f, notification, _ := newThinFake("evt_thin_bound")
		slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(timeout * 9 / 10) // the API's latency, on the bubble's clock
			f.ServeHTTP(w, r)
		})
		client := idempotencytest.NewStripeClient(fakeStripeKey, slow)
		start := time.Now()
		cancelled := make(chan time.Duration, 1)
		hs := idempotency.NewHandlers()
		idempotency.On(hs, thinType, func(ctx context.Context, _ idempotency.Tx, _ idempotency.Event[stripe.V1BillingMeterErrorReportTriggeredEventData]) error {
			<-ctx.Done()
			cancelled <- time.Since(start)
			return ctx.Err()
		})
		h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
			Secrets: []string{testSecret}, Logger: discardLogger(), Timeout: timeout, StripeClient: client,
		})
		require.NoError(t, err)
		a := idempotencytest.Deliver(h, notification, testSecret)
		answered := time.Since(start)
		require.Equal(t, http.StatusInternalServerError, a.Status, a.Body)
		var d time.Duration
		select {
		case d = <-cancelled:
		default:
			t.Fatal("the handler was not cancelled")
		}
		require.Equal(t, timeout*9/10+timeout, d, "the handler has a whole Timeout after the fetch")
		require.LessOrEqual(t, answered, 2*timeout, "the answer within twice Timeout")
	})
}

// TestThinEventInboxFetchIsBoundedByTimeout: an Inbox.Handler fetches a
// thin event within Config.Timeout too, not the inbox's own
// InboxConfig.Timeout: an API that never answers is answered 503
// stripe_unavailable at Config.Timeout, and nothing is stored. Storing
// the fetched event then has a Timeout of its own, so the answer takes up
// to twice Config.Timeout, as in synchronous mode. On the fake clock of a
// synctest bubble.
func TestThinEventInboxFetchIsBoundedByTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const timeout = 10 * time.Second
		_, notification, _ := newThinFake("evt_thin_inbox_bound")
		silent := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done() // never answers; the client gives up
		})
		hs := idempotency.NewHandlers()
		idempotency.On(hs, thinType, func(context.Context, idempotency.Tx, idempotency.Event[stripe.V1BillingMeterErrorReportTriggeredEventData]) error {
			return nil
		})
		in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{Logger: discardLogger(), Timeout: 3 * timeout})
		require.NoError(t, err)
		h, err := in.Handler(idempotency.Config{
			Secrets: []string{testSecret}, Logger: discardLogger(), Timeout: timeout,
			StripeClient: idempotencytest.NewStripeClient(fakeStripeKey, silent),
		})
		require.NoError(t, err)
		start := time.Now()
		a := idempotencytest.Deliver(h, notification, testSecret)
		require.Equal(t, http.StatusServiceUnavailable, a.Status, a.Body)
		require.JSONEq(t, `{"error":"stripe_unavailable"}`, a.Body)
		require.Equal(t, timeout, time.Since(start), "answered at Config.Timeout")
		_, found, err := in.Lookup(t.Context(), "evt_thin_inbox_bound")
		require.NoError(t, err)
		require.False(t, found, "nothing stored")
	})
}
