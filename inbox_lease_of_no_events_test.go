package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestInboxLeaseOfNoEventsChangesNothing: a lease of no events (a limit of
// zero, or below) leases nothing, fails not, and leaves the inbox as it
// was, on both stores: an expired lease that used the last attempt is not
// dead-lettered by it; the next lease of one event does that. (No test
// failed when PgxStore's lease ran its statements for a limit of zero.)
func TestInboxLeaseOfNoEventsChangesNothing(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			inbox, clock, runs := queuedInvoice(t, store, idempotency.InboxConfig{Lease: time.Minute, Timeout: 10 * time.Second, MaxAttempts: 1}, "evt_no_events")
			hung, err := idempotency.LeaseInbox(t.Context(), inbox, 1) // the last attempt; its worker hangs
			require.NoError(t, err)
			require.Len(t, hung, 1)
			clock.Advance(time.Minute + time.Second)

			for _, limit := range []int{0, -1} {
				leased, err := idempotency.LeaseInbox(t.Context(), inbox, limit)
				require.NoError(t, err, "limit %d", limit)
				require.Empty(t, leased, "limit %d", limit)
				r, found, err := inbox.Lookup(t.Context(), "evt_no_events")
				require.NoError(t, err)
				require.True(t, found)
				require.Equal(t, idempotency.InboxProcessing, r.State, "limit %d: a lease of no events dead-letters nothing", limit)
				require.Equal(t, 1, r.Attempt)
			}

			leased, err := idempotency.LeaseInbox(t.Context(), inbox, 1)
			require.NoError(t, err)
			require.Empty(t, leased)
			r, _, err := inbox.Lookup(t.Context(), "evt_no_events")
			require.NoError(t, err)
			require.Equal(t, idempotency.InboxDeadLetter, r.State, "the lease of one event dead-letters it")
			require.Zero(t, runs.Load())
		})
	}
}
