package idempotency_test

import (
	"context"
	"strings"
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
	ran := idleTaskWorker(t, b, "notify-me")

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
	requireRanSoon(t, ran, "in_notify")
}

// idleTaskWorker runs, on b's database, the workers of another process
// that registers the task name, polling hourly, and returns the keys its
// runs of the task send. It returns once the workers listen, heard the
// check of their listen connection (a NOTIFY of their own, which wakes
// them once), and wait idle: only a notification sent afterwards can wake
// them within the test.
func idleTaskWorker(t *testing.T, b *pgBackend, name string) <-chan string {
	t.Helper()
	ran := make(chan string, 1)
	hs := idempotency.NewHandlers()
	idempotency.NewTask(hs, name, func(_ context.Context, run idempotency.TaskRun[struct{}]) error {
		ran <- run.Key
		return nil
	})
	logger, logs := testLogger()
	worker, err := idempotency.NewInbox(otherProcess(t, b), hs, idempotency.InboxConfig{PollInterval: time.Hour, Logger: logger})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- worker.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-stopped)
	})
	awaitListener(t, b, 0)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), listenHeard) && idempotency.InboxIdle(worker) },
		10*time.Second, time.Millisecond, "the workers heard their listen check, then went idle")
	return ran
}

// requireRanSoon requires the task's run for key within 10 s, where the
// workers' next poll is an hour away.
func requireRanSoon(t *testing.T, ran <-chan string, key string) {
	t.Helper()
	select {
	case got := <-ran:
		require.Equal(t, key, got)
	case <-time.After(10 * time.Second):
		t.Fatal("the worker process was not woken: the task waits for its next poll, an hour away")
	}
}
