package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestTaskNotMadeByNewTaskIsRefused: a Task that NewTask did not return
// (a zero Task[T], or a nil one, declared where NewTask's result was
// meant) has no name and no registry. Its Enqueue fails, naming NewTask,
// and stores nothing: a zero one stored a task named "" that no worker
// can run, which then failed until it was dead-lettered, and reported it
// enqueued; a nil one panicked on a nil pointer.
func TestTaskNotMadeByNewTaskIsRefused(t *testing.T) {
	t.Parallel()
	for name, task := range map[string]*idempotency.Task[string]{"zero": {}, "nil": nil} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store := idempotency.NewMemoryStore()
			in, err := idempotency.NewInbox(store, idempotency.NewHandlers(), idempotency.InboxConfig{Logger: discardLogger()})
			require.NoError(t, err)
			enqueued := true
			out, err := store.Run(t.Context(), idempotency.Claim{EventID: "evt_zero_task", EventType: "invoice.paid", ReceivedAt: time.Now()},
				func(ctx context.Context, tx idempotency.Tx) (err error) {
					require.NotPanics(t, func() { enqueued, err = task.Enqueue(ctx, tx, "in_1", "receipt") })
					return err
				})
			require.ErrorContains(t, err, "NewTask")
			require.False(t, enqueued)
			require.Equal(t, idempotency.OutcomeFailed, out)
			recs, err := in.List(t.Context(), idempotency.InboxFilter{})
			require.NoError(t, err)
			require.Empty(t, recs, "nothing is stored")
		})
	}
}
