package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestTaskReturningTypedNilErrorIsAFailedAttempt: a TaskFunc that returns
// a typed nil error (a nil *T whose Error method dereferences it, the
// classic Go mistake) fails its attempt, retried with backoff, with a
// LastError that says what it was; the worker does not panic.
func TestTaskReturningTypedNilErrorIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	hs := idempotency.NewHandlers()
	task := idempotency.NewTask(hs, "typed-nil", func(context.Context, idempotency.TaskRun[misuseArgs]) error {
		var e *nilPointerErr
		return e
	})
	r.enqueue(t, "evt_typed_nil", func(ctx context.Context, tx idempotency.Tx) error {
		_, err := task.Enqueue(ctx, tx, "k", misuseArgs{})
		return err
	})
	results := &misuseResults{}
	in := r.inbox(t, hs, idempotency.InboxConfig{OnResult: results.add})
	require.NotPanics(t, func() { misuseWork(t, in, 1) })
	rec := misuseLookup(t, in, task.ID("k"))
	require.Equal(t, idempotency.InboxFailed, rec.State)
	require.Equal(t, 1, rec.Attempt)
	require.Contains(t, rec.LastError, "*idempotency_test.nilPointerErr")
	require.Equal(t, idempotency.OutcomeFailed, results.last(t).Outcome)
}
