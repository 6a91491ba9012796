package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestTaskTimeoutNamesTheTask: the error of a task attempt that ran out of
// InboxConfig.Timeout, Result.Err and the stored LastError, wraps
// ErrTimeout and names the task that timed out, not a handler: no event
// handler ran in that attempt. It said "idempotency: handler timed out".
func TestTaskTimeoutNamesTheTask(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	hs := idempotency.NewHandlers()
	task := idempotency.NewTask(hs, "send-receipt", func(ctx context.Context, run idempotency.TaskRun[misuseArgs]) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
			return errors.New("the attempt's context was not cancelled at InboxConfig.Timeout")
		}
	})
	r.enqueue(t, "evt_slow_task", func(ctx context.Context, tx idempotency.Tx) error {
		_, err := task.Enqueue(ctx, tx, "in_1", misuseArgs{})
		return err
	})
	var rs misuseResults
	in := r.inbox(t, hs, idempotency.InboxConfig{Timeout: 50 * time.Millisecond, OnResult: rs.add})
	misuseWork(t, in, 1)

	res := rs.last(t)
	require.ErrorIs(t, res.Err, idempotency.ErrTimeout)
	for _, text := range []string{res.Err.Error(), misuseLookup(t, in, task.ID("in_1")).LastError} {
		require.Contains(t, text, "task send-receipt")
		require.NotContains(t, text, "handler")
	}
}
