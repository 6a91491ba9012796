package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestInboxGiveBackRestoresTheLostLease: an expired lease taken over and
// then given back unapplied (Run stopping, or too little of the new lease
// left) is as it was before the take-over, on both stores: processing at
// the attempt that lost it, begun when that attempt began, under the lease
// that expired, with no next attempt; and the lease after takes it over
// again as that attempt's successor. (No test failed when PgxStore's
// give-back kept the taker's attempt time or set a next attempt time, nor
// when the memory store's left it without a lease.)
func TestInboxGiveBackRestoresTheLostLease(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			inbox, clock, runs := queuedInvoice(t, store, idempotency.InboxConfig{Lease: time.Minute, Timeout: 10 * time.Second}, "evt_given_back")
			start := clock.Now()
			hung, err := idempotency.LeaseInbox(t.Context(), inbox, 1) // attempt 1; its worker hangs
			require.NoError(t, err)
			require.Len(t, hung, 1)
			clock.Advance(time.Minute + time.Second)
			taken, err := idempotency.LeaseInbox(t.Context(), inbox, 1) // attempt 2 takes the expired lease over
			require.NoError(t, err)
			require.Len(t, taken, 1)
			require.Equal(t, 2, taken[0].Attempt())
			idempotency.ReleaseLeased(t.Context(), inbox, taken[0]) // and gives it back unapplied

			r, found, err := inbox.Lookup(t.Context(), "evt_given_back")
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, idempotency.InboxProcessing, r.State)
			require.Equal(t, 1, r.Attempt, "the attempt that lost the lease")
			require.True(t, start.Equal(r.AttemptedAt), "AttemptedAt %s, want attempt 1's %s", r.AttemptedAt, start)
			require.True(t, start.Add(time.Minute).Equal(r.LeaseUntil), "LeaseUntil %s, want the expired lease's end %s", r.LeaseUntil, start.Add(time.Minute))
			require.True(t, r.NextAttemptAt.IsZero(), "a processing event has no next attempt: %s", r.NextAttemptAt)

			again, err := idempotency.LeaseInbox(t.Context(), inbox, 1)
			require.NoError(t, err)
			require.Len(t, again, 1)
			require.Equal(t, 2, again[0].Attempt(), "taken over again, as attempt 1's successor")
			idempotency.ApplyLeased(t.Context(), inbox, again[0])
			require.Equal(t, int32(1), runs.Load())
			r, _, err = inbox.Lookup(t.Context(), "evt_given_back")
			require.NoError(t, err)
			require.Equal(t, idempotency.InboxProcessed, r.State)
			require.Equal(t, 2, r.Attempt)
		})
	}
}
