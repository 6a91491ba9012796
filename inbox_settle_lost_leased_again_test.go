package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestInboxSettleLostLeasedAgainReportedFailed: the UPDATE that records
// an event's failed attempt 1 went through while its answer was lost, and
// a lease took the event again (its retry due at once) before the attempt
// looked its record up: processing at attempt 2, with attempt 1's failure
// as its error, not the one a lease that takes an expired attempt over
// writes. Attempt 1 is reported once, failed as it was recorded (State
// failed, its error), by its worker: attempt 2 did not take an expired
// lease over, and reports nothing for it.
func TestInboxSettleLostLeasedAgainReportedFailed(t *testing.T) {
	t.Parallel()
	var again []idempotency.InboxLeased
	in, rs := failedSettleLost(t, "evt_leased_again", func(ctx context.Context, in *idempotency.Inbox) error {
		var err error
		again, err = idempotency.LeaseInbox(ctx, in, 1)
		return err
	})
	require.Len(t, again, 1, "leased again before the look-up")
	require.Equal(t, 2, again[0].Attempt())

	idempotency.ApplyLeased(t.Context(), in, again[0])
	rs.mu.Lock()
	defer rs.mu.Unlock()
	require.Len(t, rs.all, 2, "attempt 1 by its worker, attempt 2: %v", rs.all)
	requireFailedAsRecorded(t, rs)
	require.Equal(t, 2, rs.all[1].Attempt)
	require.Equal(t, idempotency.InboxProcessed, rs.all[1].State)
}
