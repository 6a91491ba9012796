package idempotency_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxTaskNotifiesWhereItsHandlersInboxIsOnAnotherStore: a task
// committed on a PgxStore wakes the workers of other processes by NOTIFY
// when the Handlers that registers it has an Inbox in this process on
// another store only (a Handlers shared by inboxes on a MemoryStore and a
// PgxStore, or on two schemas): that Inbox's workers cannot take the task,
// nor does its store notify this one's. The worker's poll is an hour
// away: only the notification can start the task within the test.
func TestPgxTaskNotifiesWhereItsHandlersInboxIsOnAnotherStore(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ran := idleTaskWorker(t, b, "notify-me")

	// The receiver process: the same task registered, and an Inbox of
	// its Handlers on another store.
	receiverHandlers := idempotency.NewHandlers()
	task := idempotency.NewTask(receiverHandlers, "notify-me", func(context.Context, idempotency.TaskRun[struct{}]) error { return nil })
	elsewhere, err := idempotency.NewInbox(idempotency.NewMemoryStore(), receiverHandlers, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	out, err := b.store.Run(t.Context(), idempotency.Claim{EventID: "evt_notify_other_store", EventType: "invoice.paid", ReceivedAt: time.Now()},
		func(ctx context.Context, tx idempotency.Tx) error {
			_, err := task.Enqueue(ctx, tx, "in_notify_other_store", struct{}{})
			return err
		})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	requireRanSoon(t, ran, "in_notify_other_store")
	runtime.KeepAlive(elsewhere) // built on the receiver's Handlers throughout
}
