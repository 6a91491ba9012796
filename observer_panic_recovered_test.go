package idempotency_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestObserverPanicIsRecovered: a panic in any Observer func is logged at
// error level and goes no further, as OnResult's does: the delivery is
// answered as without the Observer, an inbox's event is stored and applied
// once, and the worker goes on. A panic in Attempt or its done ended the
// inbox worker's process (every event it held leased counted an attempt);
// one in Delivery, its done or Link dropped the connection unanswered; one
// in Fetch failed the event.
func TestObserverPanicIsRecovered(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		hook   string // as the log names it
		panics int    // one synchronous delivery, one inbox delivery and its attempt
	}{
		{"Observer.Delivery", 2},
		{"Observer.Delivery's done", 2},
		{"Observer.Link", 1},
		{"Observer.Attempt", 1},
		{"Observer.Attempt's done", 1},
		{"Observer.Fetch", 2},
	} {
		t.Run(c.hook, func(t *testing.T) {
			t.Parallel()
			bug := func(hook string) {
				if hook == c.hook {
					panic("the Observer's bug in " + hook)
				}
			}
			done := func(hook string) func(idempotency.Result) {
				return func(idempotency.Result) { bug(hook) }
			}
			o := &idempotency.Observer{
				Delivery: func(ctx context.Context, _ *http.Request) (context.Context, func(idempotency.Result)) {
					bug("Observer.Delivery")
					return ctx, done("Observer.Delivery's done")
				},
				Link: func(context.Context) string {
					bug("Observer.Link")
					return "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
				},
				Attempt: func(ctx context.Context, _ idempotency.InboxRecord, _ string) (context.Context, func(idempotency.Result)) {
					bug("Observer.Attempt")
					return ctx, done("Observer.Attempt's done")
				},
				Fetch: func(context.Context, string, string, time.Duration, error) { bug("Observer.Fetch") },
			}
			var applied atomic.Int32
			hs := idempotency.NewHandlers()
			idempotency.OnCurrent(hs, []string{"customer.subscription.updated"}, fetchSubscription,
				func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Subscription]) error {
					applied.Add(1)
					return nil
				})
			logger, log := testLogger()

			h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
				Secrets: []string{testSecret}, Logger: logger, Observer: o})
			require.NoError(t, err)
			var a idempotencytest.Answer
			require.NotPanics(t, func() {
				a = idempotencytest.Deliver(h, subscriptionEvent(t, "evt_obs_panic_sync", "sub_ok"), testSecret)
			})
			require.Equal(t, http.StatusOK, a.Status, a.Body)
			require.Equal(t, idempotency.OutcomeProcessed, a.Outcome)

			in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{Logger: logger, Observer: o})
			require.NoError(t, err)
			ih, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: logger, Observer: o})
			require.NoError(t, err)
			require.NotPanics(t, func() {
				a = idempotencytest.Deliver(ih, subscriptionEvent(t, "evt_obs_panic_inbox", "sub_ok"), testSecret)
			})
			require.Equal(t, http.StatusOK, a.Status, a.Body)
			require.Equal(t, idempotency.OutcomeQueued, a.Outcome)
			var n int
			require.NotPanics(t, func() { n, err = in.WorkDue(t.Context()) })
			require.NoError(t, err)
			require.Equal(t, 1, n)
			rec, ok, err := in.Lookup(t.Context(), "evt_obs_panic_inbox")
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, idempotency.InboxProcessed, rec.State, rec.LastError)
			require.Equal(t, int32(2), applied.Load(), "each event applied once")

			require.Equal(t, c.panics, strings.Count(log.String(), `"msg":"idempotency: `+c.hook+` panicked"`), log.String())
			require.Contains(t, log.String(), `"panic":"the Observer's bug in `+c.hook+`"`)
			require.Contains(t, log.String(), `"level":"ERROR"`)
		})
	}
}
