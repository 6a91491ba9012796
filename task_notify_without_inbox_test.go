package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxTaskWithoutInboxNotifiesOtherProcesses: a synchronous receiver
// that builds no Inbox (its tasks are run by a worker deployment) wakes
// the workers of other processes by NOTIFY when a transaction that
// enqueued a task commits, as the README says, rather than leaving the
// task to their next poll. The worker's poll is an hour away: only the
// notification can start the task within the test.
func TestPgxTaskWithoutInboxNotifiesOtherProcesses(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})

	// The worker process: the task registered, Run polling hourly.
	ran := make(chan string, 1)
	workerHandlers := idempotency.NewHandlers()
	idempotency.NewTask(workerHandlers, "notify-me", func(_ context.Context, run idempotency.TaskRun[struct{}]) error {
		ran <- run.Key
		return nil
	})
	worker, err := idempotency.NewInbox(otherProcess(t, b), workerHandlers, idempotency.InboxConfig{PollInterval: time.Hour, Logger: discardLogger()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan error, 1)
	go func() { stopped <- worker.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-stopped)
	}()
	awaitListener(t, b, 0)
	require.Eventually(t, func() bool { return idempotency.InboxIdle(worker) }, 10*time.Second, time.Millisecond)

	// The receiver process: the same task registered, no Inbox.
	receiverHandlers := idempotency.NewHandlers()
	task := idempotency.NewTask(receiverHandlers, "notify-me", func(context.Context, idempotency.TaskRun[struct{}]) error { return nil })
	require.Zero(t, idempotency.LiveInboxes(receiverHandlers))
	out, err := b.store.Run(t.Context(), idempotency.Claim{EventID: "evt_notify_task", EventType: "invoice.paid", ReceivedAt: time.Now()},
		func(ctx context.Context, tx idempotency.Tx) error {
			_, err := task.Enqueue(ctx, tx, "in_notify", struct{}{})
			return err
		})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)

	select {
	case key := <-ran:
		require.Equal(t, "in_notify", key)
	case <-time.After(10 * time.Second):
		t.Fatal("the worker process was not woken: the task waits for its next poll, an hour away")
	}
}
