package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestTaskSnoozeReportedQueued: the attempt of a task that snoozes is
// reported to OnResult as OutcomeQueued says: outcome queued, state
// pending, no error, with its attempt number; the attempt is not counted,
// so the run after the snooze is reported with the same number.
func TestTaskSnoozeReportedQueued(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	hs := idempotency.NewHandlers()
	snoozed := false
	task := idempotency.NewTask(hs, "poll-provider", func(context.Context, idempotency.TaskRun[misuseArgs]) error {
		if !snoozed {
			snoozed = true // WorkDue runs on the test's goroutine
			return idempotency.Snooze(time.Minute)
		}
		return nil
	})
	r.enqueue(t, "evt_snooze_reported", func(ctx context.Context, tx idempotency.Tx) error {
		_, err := task.Enqueue(ctx, tx, "in_1", misuseArgs{})
		return err
	})
	var rs misuseResults
	in := r.inbox(t, hs, idempotency.InboxConfig{OnResult: rs.add})
	misuseWork(t, in, 1)
	res := rs.last(t)
	require.Equal(t, idempotency.OutcomeQueued, res.Outcome)
	require.Equal(t, idempotency.InboxPending, res.State)
	require.NoError(t, res.Err)
	require.Equal(t, 1, res.Attempt)
	require.Equal(t, idempotency.KindTask, res.Kind)

	r.clock.Advance(time.Minute)
	misuseWork(t, in, 1)
	res = rs.last(t)
	require.Equal(t, idempotency.OutcomeProcessed, res.Outcome)
	require.Equal(t, 1, res.Attempt, "the snoozed attempt was not counted")
}
