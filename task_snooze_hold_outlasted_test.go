package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestWorkDueHoldOfASnoozedTaskDoesNotRunOut: WorkDue holds a task that
// snoozed and came due again within the call, leased, until it returns.
// When the call outlasts that lease (here a later task's slow call moves
// the inbox's clock past it), the hold is given back and taken afresh
// before the next lease, which would otherwise find it expired: taken
// over as if its worker had died or, at its last attempt, dead-lettered
// without a run. The task stays pending, its snooze uncounted, and the
// next call runs it.
func TestWorkDueHoldOfASnoozedTaskDoesNotRunOut(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	hs := idempotency.NewHandlers()
	runs := 0 // every run is on the test's goroutine: WorkDue's
	snoozer := idempotency.NewTask(hs, "a-snoozes-once", func(context.Context, idempotency.TaskRun[misuseArgs]) error {
		if runs++; runs == 1 {
			return idempotency.Snooze(0)
		}
		return nil
	})
	slow := idempotency.NewTask(hs, "b-slow-call", func(context.Context, idempotency.TaskRun[misuseArgs]) error {
		r.clock.Advance(2 * time.Minute) // past the snoozed task's lease, DefaultLease
		return nil
	})
	r.enqueue(t, "evt_hold_snoozer", func(ctx context.Context, tx idempotency.Tx) error {
		_, err := snoozer.Enqueue(ctx, tx, "k", misuseArgs{})
		return err
	})
	r.clock.Advance(time.Second) // due after the snoozer: leased after its snooze, while it is held
	r.enqueue(t, "evt_hold_slow", func(ctx context.Context, tx idempotency.Tx) error {
		_, err := slow.Enqueue(ctx, tx, "k", misuseArgs{})
		return err
	})
	in := r.inbox(t, hs, idempotency.InboxConfig{Workers: 1, MaxAttempts: 1})

	misuseWork(t, in, 2) // the snooze and the slow call
	rec := misuseLookup(t, in, snoozer.ID("k"))
	require.Equal(t, idempotency.InboxPending, rec.State, "held past its lease, it is given back, not dead-lettered: %q", rec.LastError)
	require.Zero(t, rec.Attempt, "its snooze does not count")
	require.Empty(t, rec.LastError)
	require.Equal(t, 1, runs)

	misuseWork(t, in, 1)
	require.Equal(t, idempotency.InboxProcessed, misuseLookup(t, in, snoozer.ID("k")).State)
	require.Equal(t, 2, runs)
}
