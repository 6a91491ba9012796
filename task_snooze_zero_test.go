package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestWorkDueRunsATaskThatSnoozesOncePerCall: a task that keeps answering
// Snooze(0) (due again at once, at a fake clock that stands still) runs
// once per WorkDue, which still runs the other due tasks and returns; the
// snoozed task stays pending, its attempt not counted, and the next
// WorkDue runs it again.
func TestWorkDueRunsATaskThatSnoozesOncePerCall(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	hs := idempotency.NewHandlers()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	snoozes := 0
	snoozing := idempotency.NewTask(hs, "snoozing", func(context.Context, idempotency.TaskRun[misuseArgs]) error {
		snoozes++ // WorkDue runs on the test's goroutine
		if snoozes > 5 {
			cancel() // WorkDue would loop for ever
		}
		return idempotency.Snooze(0)
	})
	done := 0
	other := idempotency.NewTask(hs, "other", func(context.Context, idempotency.TaskRun[misuseArgs]) error {
		done++
		return nil
	})
	r.enqueue(t, "evt_snooze_zero", func(ctx context.Context, tx idempotency.Tx) error {
		if _, err := snoozing.Enqueue(ctx, tx, "k", misuseArgs{}); err != nil {
			return err
		}
		_, err := other.Enqueue(ctx, tx, "k", misuseArgs{})
		return err
	})
	in := r.inbox(t, hs, idempotency.InboxConfig{Workers: 1})

	n, err := in.WorkDue(ctx)
	require.NoError(t, err, "WorkDue returns")
	require.Equal(t, 2, n, "attempts made by WorkDue")
	require.Equal(t, 1, snoozes, "the snoozing task runs once per WorkDue")
	require.Equal(t, 1, done, "the other task runs")
	rec := misuseLookup(t, in, snoozing.ID("k"))
	require.Equal(t, idempotency.InboxPending, rec.State)
	require.Zero(t, rec.Attempt, "a snoozed attempt is not counted")
	require.Equal(t, r.clock.Now(), rec.NextAttemptAt.UTC(), "due at once")

	n, err = in.WorkDue(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, 2, snoozes)
	require.Equal(t, idempotency.InboxPending, misuseLookup(t, in, snoozing.ID("k")).State)
}
