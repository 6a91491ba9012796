package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestWorkDueStartsNoAttemptPastItsLease: WorkDue leases several tasks at
// once and runs them in turn. When the first outlasts the lease of the
// next (here it moves the inbox's clock on, as a slow call would), the
// next has less than InboxConfig.Timeout of its lease left: WorkDue gives
// it back rather than run it, as Run's workers do, and the next lease
// takes it afresh. Meanwhile another inbox's worker found that lease
// expired and took the task over: it ran once, not once by each.
func TestWorkDueStartsNoAttemptPastItsLease(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	hs := idempotency.NewHandlers()
	var other *idempotency.Inbox // another process's workers
	slowRuns, onceRuns := 0, 0   // every run is on the test's goroutine: WorkDue's
	slow := idempotency.NewTask(hs, "a-slow-call", func(ctx context.Context, _ idempotency.TaskRun[misuseArgs]) error {
		if slowRuns++; slowRuns == 1 {
			r.clock.Advance(2 * time.Minute) // past the leases taken with it, DefaultLease
			misuseWork(t, other, 2)          // takes both over: this task, and the next
		}
		return nil
	})
	once := idempotency.NewTask(hs, "b-runs-once", func(context.Context, idempotency.TaskRun[misuseArgs]) error {
		onceRuns++
		return nil
	})
	r.enqueue(t, "evt_lease_ran_out", func(ctx context.Context, tx idempotency.Tx) error {
		if _, err := slow.Enqueue(ctx, tx, "k", misuseArgs{}); err != nil {
			return err
		}
		_, err := once.Enqueue(ctx, tx, "k", misuseArgs{})
		return err
	})
	in := r.inbox(t, hs, idempotency.InboxConfig{Workers: 2})
	other = r.inbox(t, hs, idempotency.InboxConfig{})

	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, onceRuns, "run by the worker that took it over, not again past its lease")
	require.Equal(t, 1, n, "the slow task alone: the next one's lease had run out")
	require.Equal(t, idempotency.InboxProcessed, misuseLookup(t, in, once.ID("k")).State)
	require.Equal(t, idempotency.InboxProcessed, misuseLookup(t, in, slow.ID("k")).State)
}
