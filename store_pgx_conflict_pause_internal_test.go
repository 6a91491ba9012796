package idempotency

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// The pause after a conflict is drawn in [0, 10 ms·2^(attempt-1)): the
// bound doubles with each failed attempt, and the draw is the whole pause.
func TestConflictPauseDoubles(t *testing.T) {
	for attempt, bound := range map[int]time.Duration{1: 10 * time.Millisecond, 2: 20 * time.Millisecond, 3: 40 * time.Millisecond, 4: 80 * time.Millisecond} {
		var asked int64
		longest := conflictPause(attempt, func(n int64) int64 { asked = n; return n - 1 })
		require.Equal(t, int64(bound), asked, "attempt %d: the bound of the draw", attempt)
		require.Equal(t, bound-1, longest, "attempt %d", attempt)
		require.Zero(t, conflictPause(attempt, func(int64) int64 { return 0 }), "attempt %d", attempt)
	}
}

// retryConflicts pauses before each call that follows a deadlock or a
// serialization failure, told the attempt that failed, and before no
// other: not after a chained session lost, which met no other
// transaction, nor after any other error, which it returns at once.
func TestRetryConflictsPausesAfterConflictsOnly(t *testing.T) {
	serialization := &pgconn.PgError{Code: pgSerializationFailure}
	deadlock := &pgconn.PgError{Code: pgDeadlockDetected}
	other := errors.New("not a conflict")
	for name, tc := range map[string]struct {
		errs   []error // of the calls, in order
		calls  int
		paused []int
		err    error
	}{
		"conflicts then success": {errs: []error{serialization, deadlock, nil}, calls: 3, paused: []int{1, 2}},
		"chained session lost":   {errs: []error{serialization, &chainedSessionLost{other}, nil}, calls: 3, paused: []int{1}},
		"other error":            {errs: []error{other}, calls: 1, err: other},
		"conflict then other":    {errs: []error{deadlock, other}, calls: 2, paused: []int{1}, err: other},
		"out of attempts":        {errs: []error{deadlock, deadlock, deadlock, deadlock, serialization}, calls: maxAttempts, paused: []int{1, 2, 3, 4}, err: serialization},
	} {
		t.Run(name, func(t *testing.T) {
			var paused []int
			s := &PgxStore{conflictWait: func(_ context.Context, attempt int) bool {
				paused = append(paused, attempt)
				return true
			}}
			calls := 0
			err := s.retryConflicts(t.Context(), func() error {
				calls++
				return tc.errs[calls-1]
			})
			require.Equal(t, tc.err, err)
			require.Equal(t, tc.calls, calls)
			require.Equal(t, tc.paused, paused)
		})
	}
}

// A context that ends during the pause ends it: retryConflicts returns
// the context's error, naming the conflict's, which it no longer wraps
// (no caller runs it again), and calls fn no more.
func TestRetryConflictsStopsAtTheContextsEnd(t *testing.T) {
	conflict := &pgconn.PgError{Severity: "ERROR", Code: pgDeadlockDetected, Message: "deadlock detected"}
	ctx, cancel := context.WithCancel(t.Context())
	s := &PgxStore{conflictWait: func(ctx context.Context, _ int) bool {
		cancel() // the context ends during the pause
		return pause(ctx, time.Hour)
	}}
	calls := 0
	err := s.retryConflicts(ctx, func() error {
		calls++
		return conflict
	})
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, retryable(err), "a cut rerun reads as a conflict: %v", err)
	require.EqualError(t, err, "idempotency: context canceled before the transaction ran again after: ERROR: deadlock detected (SQLSTATE 40P01)")
	require.Equal(t, 1, calls)
}

// A chained session lost is run again without a pause, but not once the
// context has ended: retryConflicts returns the context's error, naming
// the lost session's, and calls fn no more.
func TestRetryConflictsStopsAtTheContextsEndAfterAChainedSessionLost(t *testing.T) {
	t.Parallel()
	lost := errors.New("conn closed")
	ctx, cancel := context.WithCancel(t.Context())
	s := &PgxStore{conflictWait: func(context.Context, int) bool {
		t.Error("no pause after a chained session lost")
		return true
	}}
	calls := 0
	err := s.retryConflicts(ctx, func() error {
		calls++
		cancel() // the context ends as the attempt fails
		return &chainedSessionLost{lost}
	})
	require.ErrorIs(t, err, context.Canceled)
	require.EqualError(t, err, "idempotency: context canceled before the transaction ran again after: conn closed")
	require.Equal(t, 1, calls)
}

// A context past its deadline before a conflict's rerun: retryConflicts
// returns context.DeadlineExceeded, the context's own error, naming the
// conflict, without pausing.
func TestRetryConflictsStopsAtTheContextsDeadline(t *testing.T) {
	t.Parallel()
	conflict := &pgconn.PgError{Severity: "ERROR", Code: pgSerializationFailure, Message: "could not serialize access"}
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	s := &PgxStore{conflictWait: func(context.Context, int) bool {
		t.Error("no pause once the context has ended")
		return true
	}}
	calls := 0
	err := s.retryConflicts(ctx, func() error {
		calls++
		return conflict
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.EqualError(t, err, "idempotency: context deadline exceeded before the transaction ran again after: ERROR: could not serialize access (SQLSTATE 40001)")
	require.Equal(t, 1, calls)
}
