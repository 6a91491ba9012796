package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestTaskSkipReasonIsLogged: a task that returns Skip ends skipped, and
// its attempt's log line gives the reason, as an event's does: Skip's
// reason is stored and logged, and TaskFunc documents Skip for tasks.
func TestTaskSkipReasonIsLogged(t *testing.T) {
	t.Parallel()
	const reason = "customer deleted before the welcome email"
	r := newMisuseRig()
	hs := idempotency.NewHandlers()
	task := idempotency.NewTask(hs, "welcome", func(context.Context, idempotency.TaskRun[misuseArgs]) error {
		return idempotency.Skip(reason)
	})
	r.enqueue(t, "evt_task_skip_logged", func(ctx context.Context, tx idempotency.Tx) error {
		_, err := task.Enqueue(ctx, tx, "cus_1", misuseArgs{})
		return err
	})
	logger, logs := testLogger()
	in, err := idempotency.NewInbox(r.store, hs, idempotency.InboxConfig{Now: r.clock.Now, Logger: logger})
	require.NoError(t, err)
	misuseWork(t, in, 1)
	require.Equal(t, idempotency.InboxSkipped, misuseLookup(t, in, task.ID("cus_1")).State)
	require.Contains(t, logs.String(), `"skip_reason":"`+reason+`"`, "the task attempt's log line")
}
