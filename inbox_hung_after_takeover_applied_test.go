package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestInboxHungAttemptAfterTheNextAppliedIt: a worker hangs holding an
// event's first attempt past its lease; the second attempt reports the
// first as it starts, and applies the event. When the hung worker goes
// on, its claim finds the event claimed, by that second attempt. Its end
// was reported as a duplicate, as if another delivery had applied the
// event, with no state: a metric of duplicates counted a lost lease. It
// ends as any attempt that lost its lease does: failed, with the lease
// lost, to the Observer's done and not again to OnResult, and the event
// stays as the second attempt left it. Both stores, on a fake clock.
func TestInboxHungAttemptAfterTheNextAppliedIt(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var rs, observed misuseResults
			inbox, clock, runs := queuedInvoice(t, store, idempotency.InboxConfig{
				Lease: time.Minute, Timeout: 10 * time.Second, OnResult: rs.add,
				Observer: &idempotency.Observer{Attempt: func(ctx context.Context, _ idempotency.InboxRecord, _ string) (context.Context, func(idempotency.Result)) {
					return ctx, observed.add
				}},
			}, "evt_hung_late")

			hung, err := idempotency.LeaseInbox(t.Context(), inbox, 1)
			require.NoError(t, err)
			require.Len(t, hung, 1)
			clock.Advance(time.Minute)
			n, err := inbox.WorkDue(t.Context()) // attempt 2 applies it
			require.NoError(t, err)
			require.Equal(t, 1, n)
			second := rs.last(t)
			require.Equal(t, 2, second.Attempt)
			require.Equal(t, idempotency.OutcomeProcessed, second.Outcome)

			idempotency.ApplyLeased(t.Context(), inbox, hung[0]) // the hung worker goes on
			rs.mu.Lock()
			var reported []idempotency.Result
			for _, r := range rs.all {
				reported = append(reported, idempotency.Result{Attempt: r.Attempt, Outcome: r.Outcome, State: r.State})
			}
			rs.mu.Unlock()
			require.Equal(t, []idempotency.Result{
				{Attempt: 1, Outcome: idempotency.OutcomeFailed, State: idempotency.InboxFailed}, // by the take-over
				{Attempt: 2, Outcome: idempotency.OutcomeProcessed, State: idempotency.InboxProcessed},
			}, reported, "the hung worker's end not again")
			late := observed.last(t)
			require.Equal(t, 1, late.Attempt, "the hung attempt ends")
			require.Equal(t, idempotency.OutcomeFailed, late.Outcome, "not a duplicate: its lease was lost")
			require.ErrorContains(t, late.Err, "lease lost to a newer attempt")
			require.Empty(t, late.State, "its end was not recorded")
			require.Equal(t, int32(1), runs.Load())
			rec, _, err := inbox.Lookup(t.Context(), "evt_hung_late")
			require.NoError(t, err)
			require.Equal(t, idempotency.InboxProcessed, rec.State)
			require.Equal(t, 2, rec.Attempt)
		})
	}
}
