package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestTaskSnoozeNegativeIsDueNow: Snooze takes d "at least 0": a negative
// d is 0, in the SnoozeError a TaskFunc returns, and the task is due at
// the inbox's clock, not in the past.
func TestTaskSnoozeNegativeIsDueNow(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	hs := idempotency.NewHandlers()
	task := idempotency.NewTask(hs, "snooze-negative", func(context.Context, idempotency.TaskRun[misuseArgs]) error {
		return idempotency.Snooze(-time.Hour)
	})
	r.enqueue(t, "evt_snooze_negative", func(ctx context.Context, tx idempotency.Tx) error {
		_, err := task.Enqueue(ctx, tx, "k", misuseArgs{})
		return err
	})
	in := r.inbox(t, hs, idempotency.InboxConfig{})
	r.clock.Advance(time.Minute)
	misuseWork(t, in, 1)
	rec := misuseLookup(t, in, task.ID("k"))
	require.Equal(t, idempotency.InboxPending, rec.State)
	require.Equal(t, r.clock.Now(), rec.NextAttemptAt.UTC(), "due at the inbox's clock, not an hour before it")
	var s *idempotency.SnoozeError
	require.ErrorAs(t, idempotency.Snooze(-time.Hour), &s)
	require.Zero(t, s.After)
}
