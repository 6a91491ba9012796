package idempotency_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxAttemptBegunPastItsLeaseKeepsOrder: a worker delayed past its
// lease's end before its attempt begins (a slow OnResult or Observer, a
// full pool) finds its lease lost, although no lease took its event over:
// by then a lease elsewhere has counted its worker dead and taken the
// earlier event of its object, which the late attempt would otherwise run
// beside, and could commit before. The late event is leased again once
// the earlier one is applied, and applied after it.
func TestInboxAttemptBegunPastItsLeaseKeepsOrder(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			var (
				mu      sync.Mutex
				applied []string
			)
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
				mu.Lock()
				defer mu.Unlock()
				applied = append(applied, ev.ID)
				return nil
			})
			cfg := idempotency.InboxConfig{Now: clock.Now, Lease: time.Minute, Timeout: 10 * time.Second, Logger: discardLogger()}
			var ends []idempotency.Result // each attempt's end, as its worker gives it
			observeResults(&cfg, func(r idempotency.Result) {
				mu.Lock()
				defer mu.Unlock()
				ends = append(ends, r)
			})
			inbox, err := idempotency.NewInbox(store, hs, cfg)
			require.NoError(t, err)
			h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			deliver := func(eventID string, created int64) {
				t.Helper()
				a := idempotencytest.Deliver(h, memInboxPayload(t, eventID, "in_late_start", created), testSecret)
				require.Equal(t, idempotency.OutcomeQueued, a.Outcome)
			}
			lease := func(want string, attempt int) idempotency.InboxLeased {
				t.Helper()
				ls, err := idempotency.LeaseInbox(ctx, inbox, 2)
				require.NoError(t, err)
				require.Len(t, ls, 1)
				require.Equal(t, want, ls[0].EventID())
				require.Equal(t, attempt, ls[0].Attempt())
				return ls[0]
			}

			deliver("evt_late_start_second", memCreated+1)
			late := lease("evt_late_start_second", 1)   // its worker is delayed
			deliver("evt_late_start_first", memCreated) // Stripe sent it late
			none, err := idempotency.LeaseInbox(ctx, inbox, 2)
			require.NoError(t, err)
			require.Empty(t, none, "the first event waits while the second one's lease runs")

			clock.Advance(time.Minute) // the second one's lease ends, its attempt not begun
			first := lease("evt_late_start_first", 1)
			idempotency.ApplyLeased(ctx, inbox, late)
			mu.Lock()
			require.Empty(t, applied, "an attempt begun past its lease runs nothing")
			require.Len(t, ends, 1)
			require.ErrorIs(t, ends[0].Err, idempotency.ErrLeaseLost)
			require.ErrorIs(t, ends[0].Err, idempotency.ErrLeaseExpired, "the lease that takes it over reports it")
			require.Empty(t, ends[0].State, "its end is not recorded")
			mu.Unlock()
			r, _, err := inbox.Lookup(ctx, "evt_late_start_second")
			require.NoError(t, err)
			require.Equal(t, idempotency.InboxProcessing, r.State, "left to its expired lease")
			require.Equal(t, 1, r.Attempt)

			idempotency.ApplyLeased(ctx, inbox, first)
			idempotency.ApplyLeased(ctx, inbox, lease("evt_late_start_second", 2))
			mu.Lock()
			require.Equal(t, []string{"evt_late_start_first", "evt_late_start_second"}, applied)
			mu.Unlock()
			for _, id := range []string{"evt_late_start_first", "evt_late_start_second"} {
				r, _, err := inbox.Lookup(ctx, id)
				require.NoError(t, err)
				require.Equal(t, idempotency.InboxProcessed, r.State, id)
			}
		})
	}
}
