package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// The fence is the attempt's number and its time together: a stalled
// attempt cannot record its end over, nor apply the event under, a newer
// attempt that another process, its clock behind, started at the very time
// the stalled one did.
func TestInboxFenceOnAttemptNumberAtOneTime(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			inbox, clock, runs := queuedInvoice(t, store, idempotency.InboxConfig{Lease: time.Minute, Timeout: 10 * time.Second}, "evt_same_time")

			stale, err := idempotency.LeaseInbox(t.Context(), inbox, 1) // attempt 1, at t0; its worker stalls
			require.NoError(t, err)
			require.Len(t, stale, 1)
			clock.Advance(time.Minute)
			taken, err := idempotency.LeaseInbox(t.Context(), inbox, 1) // attempt 2 takes the expired lease over
			require.NoError(t, err)
			require.Len(t, taken, 1)
			clock.Advance(-time.Minute) // the next process's clock is a minute behind
			ok, err := idempotency.SettleLeased(t.Context(), inbox, taken[0], idempotency.InboxFailed, "down")
			require.NoError(t, err)
			require.True(t, ok, "attempt 2 failed, due again at t0")
			newer, err := idempotency.LeaseInbox(t.Context(), inbox, 1)
			require.NoError(t, err)
			require.Len(t, newer, 1)
			require.Equal(t, 3, newer[0].Attempt())
			r, _, err := inbox.Lookup(t.Context(), "evt_same_time")
			require.NoError(t, err)
			require.Equal(t, idempotency.InboxProcessing, r.State)
			require.True(t, r.AttemptedAt.Equal(clock.Now()), "attempt 3 started at t0, as attempt 1 did")

			ok, err = idempotency.SettleLeased(t.Context(), inbox, stale[0], idempotency.InboxDeadLetter, "stale")
			require.NoError(t, err)
			require.False(t, ok, "the stalled attempt 1 cannot record over attempt 3")
			idempotency.ApplyLeased(t.Context(), inbox, stale[0])
			require.Zero(t, runs.Load(), "the stalled attempt 1 cannot apply the event under attempt 3's lease")
			r, _, err = inbox.Lookup(t.Context(), "evt_same_time")
			require.NoError(t, err)
			require.Equal(t, idempotency.InboxProcessing, r.State)
			require.Equal(t, 3, r.Attempt)

			idempotency.ApplyLeased(t.Context(), inbox, newer[0])
			r, _, err = inbox.Lookup(t.Context(), "evt_same_time")
			require.NoError(t, err)
			require.Equal(t, idempotency.InboxProcessed, r.State)
			require.Equal(t, int32(1), runs.Load())
		})
	}
}
