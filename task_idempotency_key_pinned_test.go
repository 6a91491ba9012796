package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestTaskIdempotencyKeyIsPinned: TaskRun.IdempotencyKey is the task's
// name, '-', and the hex SHA-256 of its id, task:<name>:<key>. A value
// computed once and pinned: the key must not change between releases (a
// retry after a deploy would otherwise repeat the provider's call), and
// it must be derived from the task's key, not from anything else that
// happens to be unique.
func TestTaskIdempotencyKeyIsPinned(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	hs := idempotency.NewHandlers()
	var got []idempotency.TaskRun[misuseArgs]
	task := idempotency.NewTask(hs, "send-receipt", func(_ context.Context, run idempotency.TaskRun[misuseArgs]) error {
		got = append(got, run) // WorkDue runs on the test's goroutine
		return nil
	})
	r.enqueue(t, "evt_pinned_key", func(ctx context.Context, tx idempotency.Tx) error {
		_, err := task.Enqueue(ctx, tx, "in_1", misuseArgs{Amount: 7})
		return err
	})
	misuseWork(t, r.inbox(t, hs, idempotency.InboxConfig{}), 1)
	require.Len(t, got, 1)
	require.Equal(t, "in_1", got[0].Key)
	require.Equal(t, "task:send-receipt:in_1", got[0].ID)
	// sha256("task:send-receipt:in_1"), computed independently (sha256sum).
	require.Equal(t, "send-receipt-fecb372f8843489f63fb5ef7e9e191a18900dcdd5028fffcb82af7d392470223", got[0].IdempotencyKey)
}
