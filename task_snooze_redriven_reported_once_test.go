package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestTaskHungRedrivenSnoozedReportedOnce: a worker of a process with
// MaxAttempts 1 hangs holding a task's attempt 1 past its lease; the next
// lease dead-letters it and reports that attempt. Redriven, the task fails
// attempt 1 and snoozes at attempt 2 on a process with MaxAttempts 3 (a
// deploy raised it): it is pending at attempt 1, as a task that snoozed
// after a lease took attempt 1 over is. The hung worker's end must still
// not reach OnResult a second time.
func TestTaskHungRedrivenSnoozedReportedOnce(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	hs := idempotency.NewHandlers()
	calls := 0
	task := idempotency.NewTask(hs, "poll-provider", func(context.Context, idempotency.TaskRun[misuseArgs]) error {
		calls++ // WorkDue and ApplyLeased run on the test's goroutine
		switch calls {
		case 1:
			return errors.New("provider down")
		case 2:
			return idempotency.Snooze(time.Hour)
		}
		return nil // the hung worker, returning at last
	})
	r.enqueue(t, "evt_task_redriven", func(ctx context.Context, tx idempotency.Tx) error {
		_, err := task.Enqueue(ctx, tx, "in_1", misuseArgs{})
		return err
	})
	var rs misuseResults
	raised := r.inbox(t, hs, idempotency.InboxConfig{MaxAttempts: 3, Lease: time.Minute, Timeout: 10 * time.Second, OnResult: rs.add})
	before := r.inbox(t, hs, idempotency.InboxConfig{MaxAttempts: 1, Lease: time.Minute, Timeout: 10 * time.Second, OnResult: rs.add})

	hung := hangRedriven(t, r, before, raised, &rs)
	misuseWork(t, raised, 1) // attempt 1 fails
	r.clock.Advance(time.Minute)
	misuseWork(t, raised, 1) // attempt 2 snoozes
	rec := misuseLookup(t, raised, hung.EventID())
	require.Equal(t, idempotency.InboxPending, rec.State)
	require.Equal(t, 1, rec.Attempt)

	idempotency.ApplyLeased(t.Context(), before, hung) // the hung worker returns
	rs.mu.Lock()
	defer rs.mu.Unlock()
	require.Len(t, rs.all, 3, "the lease's report, attempt 1 failed, attempt 2 snoozed; the hung attempt 1 reported again: %v", rs.all)
}

// TestTaskHungSnoozingAfterRedriveReportedOnce: a worker hangs holding a
// task's attempt 1 past its lease; the next lease dead-letters it and
// reports that attempt, and an operator redrives it (pending at attempt
// 0, its last attempt's start kept). The hung worker then returns Snooze:
// the row looks as its own snooze would, but its lease was lost long ago,
// so its end is not reported again, nor taken for a snooze recorded. The
// redriven task is due at once, and runs.
func TestTaskHungSnoozingAfterRedriveReportedOnce(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	hs := idempotency.NewHandlers()
	calls := 0
	task := idempotency.NewTask(hs, "poll-provider", func(context.Context, idempotency.TaskRun[misuseArgs]) error {
		calls++ // WorkDue and ApplyLeased run on the test's goroutine
		if calls == 1 {
			return idempotency.Snooze(time.Hour) // the hung worker, returning at last
		}
		return nil
	})
	r.enqueue(t, "evt_task_snooze_redriven", func(ctx context.Context, tx idempotency.Tx) error {
		_, err := task.Enqueue(ctx, tx, "in_1", misuseArgs{})
		return err
	})
	var rs misuseResults
	in := r.inbox(t, hs, idempotency.InboxConfig{MaxAttempts: 1, Lease: time.Minute, Timeout: 10 * time.Second, OnResult: rs.add})

	hung := hangRedriven(t, r, in, in, &rs)
	idempotency.ApplyLeased(t.Context(), in, hung) // the hung worker returns Snooze
	rs.mu.Lock()
	require.Len(t, rs.all, 1, "the hung attempt 1, reported by the lease that dead-lettered it, reported again: %v", rs.all)
	rs.mu.Unlock()
	rec := misuseLookup(t, in, hung.EventID())
	require.Equal(t, idempotency.InboxPending, rec.State)
	require.Equal(t, 0, rec.Attempt)

	misuseWork(t, in, 1) // due at once: run, not held as snoozed
	rec = misuseLookup(t, in, hung.EventID())
	require.Equal(t, idempotency.InboxProcessed, rec.State)
	require.Equal(t, 2, calls)
	require.Equal(t, idempotency.OutcomeProcessed, rs.last(t).Outcome)
}

// hangRedriven leases the rig's one task at in (attempt 1, its worker
// hanging), lets in's next lease, a lease later, dead-letter it and report
// it to rs, and redrives it through redriver. It returns the hung lease.
func hangRedriven(t *testing.T, r *misuseRig, in, redriver *idempotency.Inbox, rs *misuseResults) idempotency.InboxLeased {
	t.Helper()
	hung, err := idempotency.LeaseInbox(t.Context(), in, 1)
	require.NoError(t, err)
	require.Len(t, hung, 1)
	r.clock.Advance(time.Minute)
	misuseWork(t, in, 0) // dead-letters and reports attempt 1
	require.ErrorIs(t, rs.last(t).Err, idempotency.ErrLeaseExpired)
	n, err := redriver.Redrive(t.Context(), idempotency.RedriveFilter{})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	return hung[0]
}
