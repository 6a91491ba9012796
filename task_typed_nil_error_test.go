package idempotency_test

import (
	"context"
	"fmt"
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
	var e *nilPointerErr
	requireTaskErrorFails(t, e, "*idempotency_test.nilPointerErr")
}

// TestTaskWrappingTypedNilOfPackageErrorIsAFailedAttempt: a TaskFunc's
// error that wraps a typed nil of Snooze's, Permanent's or Skip's error
// type is an ordinary failed attempt, with a LastError that names both
// types: the worker reads none of them (a snooze's delay, a skip's
// reason).
func TestTaskWrappingTypedNilOfPackageErrorIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	for _, inner := range []error{
		(*idempotency.SnoozeError)(nil), (*idempotency.PermanentError)(nil), (*idempotency.SkipError)(nil),
	} {
		name := fmt.Sprintf("%T", inner)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			requireTaskErrorFails(t, fmt.Errorf("provider: %w", inner), "*fmt.wrapError", name)
		})
	}
}

// requireTaskErrorFails requires a task whose func returns returned to
// fail its first attempt without a panic, retried with backoff, with a
// LastError that holds each of wants.
func requireTaskErrorFails(t *testing.T, returned error, wants ...string) {
	t.Helper()
	r := newMisuseRig()
	hs := idempotency.NewHandlers()
	task := idempotency.NewTask(hs, "typed-nil", func(context.Context, idempotency.TaskRun[misuseArgs]) error {
		return returned
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
	for _, want := range wants {
		require.Contains(t, rec.LastError, want)
	}
	require.Equal(t, idempotency.OutcomeFailed, results.last(t).Outcome)
}

// TestStoreRunWrappingTypedNilOfPackageErrorFails: Store.Run called
// directly, with an ApplyFunc whose error wraps a typed nil *SkipError,
// fails the claim on both stores, nothing recorded, with an error that
// names both types, instead of panicking as it read the skip's reason.
func TestStoreRunWrappingTypedNilOfPackageErrorFails(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			claim := idempotency.Claim{EventID: "evt_run_wraps_nil", EventType: "invoice.paid"}
			var (
				out idempotency.Outcome
				err error
			)
			require.NotPanics(t, func() {
				out, err = store.Run(t.Context(), claim, func(context.Context, idempotency.Tx) error {
					return fmt.Errorf("downstream: %w", (*idempotency.SkipError)(nil))
				})
			})
			require.Equal(t, idempotency.OutcomeFailed, out)
			require.ErrorContains(t, err, "*fmt.wrapError")
			require.ErrorContains(t, err, "*idempotency.SkipError")
			out, err = store.Run(t.Context(), claim, nil)
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeProcessed, out, "the failed claim recorded nothing")
		})
	}
}
