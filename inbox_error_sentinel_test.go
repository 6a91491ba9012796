package idempotency_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxAttemptErrorsWrapASentinel: the package documents that what it
// finds wrong with an inbox attempt is, or wraps, one of its exported
// sentinels or types.
// Two inbox attempts reported errors no caller could name in OnResult:
// one whose lease a newer attempt took over before it ended (its worker
// hung), an unexported sentinel, and one at a task no NewTask registered
// in the process, a bare error. They wrap ErrLeaseLost and
// ErrTaskNotRegistered; the first, whose end reaches the Observer's done
// only (the attempt that took it over reported it), ErrLeaseExpired too.
// The lease, on both stores.
func TestInboxAttemptErrorsWrapASentinel(t *testing.T) {
	t.Parallel()
	t.Run("task not registered", func(t *testing.T) {
		t.Parallel()
		r := newMisuseRig()
		hs := idempotency.NewHandlers()
		task := idempotency.NewTask(hs, "send-receipt", func(context.Context, idempotency.TaskRun[misuseArgs]) error { return nil })
		r.enqueue(t, "evt_unregistered", func(ctx context.Context, tx idempotency.Tx) error {
			_, err := task.Enqueue(ctx, tx, "in_1", misuseArgs{})
			return err
		})
		var rs misuseResults
		misuseWork(t, r.inbox(t, idempotency.NewHandlers(), idempotency.InboxConfig{OnResult: rs.add}), 1)
		res := rs.last(t)
		require.Equal(t, idempotency.OutcomeFailed, res.Outcome)
		require.True(t, errors.Is(res.Err, idempotency.ErrTaskNotRegistered), "Result.Err %q", res.Err)
	})
	for name, store := range bothStores(t) {
		t.Run("lease lost/"+name, func(t *testing.T) {
			t.Parallel()
			res := taskAttemptAfterTakeover(t, store, func(context.Context, idempotency.TaskRun[misuseArgs]) error { return nil })
			require.Equal(t, 1, res.Attempt, "the hung worker's attempt")
			require.Equal(t, idempotency.OutcomeFailed, res.Outcome)
			require.True(t, errors.Is(res.Err, idempotency.ErrLeaseLost), "Result.Err %q", res.Err)
			require.True(t, errors.Is(res.Err, idempotency.ErrLeaseExpired), "reported by the attempt that took it over: Result.Err %q", res.Err)
			require.NotContains(t, res.Err.Error(), "rolled back", "the task's func ran: nothing was rolled back")
		})
	}
}

// taskAttemptAfterTakeover enqueues a send-receipt task that fn runs, on
// store, and leases it: attempt 1, whose worker hangs. Past its lease a
// newer attempt (2) takes it over, reports attempt 1 as it starts, and
// runs it; then attempt 1 runs, and what the Observer's done was given for
// its end is returned: OnResult, which the take-over's report reached, is
// not called for it again. On a fake clock.
func taskAttemptAfterTakeover(t *testing.T, store idempotency.Store, fn idempotency.TaskFunc[misuseArgs]) idempotency.Result {
	t.Helper()
	return taskAttemptAfterTakeoverLogged(t, store, fn, discardLogger())
}

// taskAttemptAfterTakeoverLogged is taskAttemptAfterTakeover with the
// inbox logging to log.
func taskAttemptAfterTakeoverLogged(t *testing.T, store idempotency.Store, fn idempotency.TaskFunc[misuseArgs], log *slog.Logger) idempotency.Result {
	t.Helper()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	hs := idempotency.NewHandlers()
	task := idempotency.NewTask(hs, "send-receipt", fn)
	var rs, observed misuseResults
	obs := &idempotency.Observer{Attempt: func(ctx context.Context, _ idempotency.InboxRecord, _ string) (context.Context, func(idempotency.Result)) {
		return ctx, observed.add
	}}
	inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
		Now: clock.Now, Lease: time.Minute, Timeout: 10 * time.Second, Logger: log, OnResult: rs.add, Observer: obs,
	})
	require.NoError(t, err)
	_, err = store.Run(t.Context(), idempotency.Claim{EventID: "evt_hung", ReceivedAt: clock.Now()}, func(ctx context.Context, tx idempotency.Tx) error {
		_, err := task.Enqueue(ctx, tx, "in_hung", misuseArgs{})
		return err
	})
	require.NoError(t, err)

	hung, err := idempotency.LeaseInbox(t.Context(), inbox, 1)
	require.NoError(t, err)
	require.Len(t, hung, 1)
	clock.Advance(time.Minute)
	n, err := inbox.WorkDue(t.Context()) // takes the lease over: attempt 2
	require.NoError(t, err)
	require.Equal(t, 1, n)

	idempotency.ApplyLeased(t.Context(), inbox, hung[0]) // the hung worker returns
	rs.mu.Lock()
	reported := append([]idempotency.Result(nil), rs.all...)
	rs.mu.Unlock()
	require.Len(t, reported, 2, "attempt 1, by the take-over, and attempt 2: %v", reported)
	require.Equal(t, 1, reported[0].Attempt)
	require.ErrorIs(t, reported[0].Err, idempotency.ErrLeaseExpired)
	return observed.last(t)
}
