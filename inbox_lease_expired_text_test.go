package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxLeaseExpiredErrTextIsTheLastError: the attempt a lease found
// expired is reported (to OnResult, the log and the Observer) with the
// words of the event's last error, "lease expired after attempt 1: its
// worker died, ...", as idemctl and the dashboard show it, not with the
// attempt's number after the cause ("... or the clocks of the replicas
// disagree after attempt 1", which read as though the clocks disagreed
// after it). Both the take-over's report and the dead letter's. Both
// stores, on a fake clock.
func TestInboxLeaseExpiredErrTextIsTheLastError(t *testing.T) {
	t.Parallel()
	for _, last := range []bool{false, true} {
		for name, store := range bothStores(t) {
			t.Run(map[bool]string{false: "take-over", true: "dead-letter"}[last]+"/"+name, func(t *testing.T) {
				t.Parallel()
				clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
				hs := idempotency.NewHandlers()
				idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
				maxAttempts := 3
				if last {
					maxAttempts = 1
				}
				var rs misuseResults
				inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
					Now: clock.Now, MaxAttempts: maxAttempts, Lease: time.Minute, Timeout: 10 * time.Second,
					Logger: discardLogger(), OnResult: rs.add,
				})
				require.NoError(t, err)
				invoiceDeliverer(t, inbox)("evt_died")

				hung, err := idempotency.LeaseInbox(t.Context(), inbox, 1) // attempt 1, its worker killed
				require.NoError(t, err)
				require.Len(t, hung, 1)
				clock.Advance(time.Minute + time.Second)
				over, err := idempotency.LeaseInbox(t.Context(), inbox, 1) // finds it expired
				require.NoError(t, err)
				rec, ok, err := inbox.Lookup(t.Context(), "evt_died")
				require.NoError(t, err)
				require.True(t, ok)
				require.Equal(t, "lease expired after attempt 1: its worker died, hung or lost its connection, or the clocks of the replicas disagree", rec.LastError)
				if last {
					require.Empty(t, over)
					require.Equal(t, idempotency.InboxDeadLetter, rec.State)
				} else {
					require.Len(t, over, 1)
					idempotency.ApplyLeased(t.Context(), inbox, over[0])
				}

				rs.mu.Lock()
				defer rs.mu.Unlock()
				require.NotEmpty(t, rs.all)
				first := rs.all[0]
				require.Equal(t, 1, first.Attempt)
				require.ErrorIs(t, first.Err, idempotency.ErrLeaseExpired)
				require.EqualError(t, first.Err, "idempotency: "+rec.LastError)
			})
		}
	}
}
