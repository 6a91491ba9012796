package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestInboxTaskLeaseLostIsReportedSo: ErrLeaseLost's doc says the end of
// an attempt whose lease a newer attempt took over is a failed attempt
// with no State, its error ErrLeaseLost. A task whose func returned an
// error, Skip or Snooze once its lease was taken over was reported with
// the func's own error, or as skipped or queued with no error at all: a
// caller counting lost leases with errors.Is missed it, and a skip the
// inbox never recorded was counted as one. Its end reaches the
// Observer's done (the attempt that took it over reported it to
// OnResult). Both stores.
func TestInboxTaskLeaseLostIsReportedSo(t *testing.T) {
	t.Parallel()
	errFunc := errors.New("the receipt service refused")
	ends := map[string]error{"error": errFunc, "skip": idempotency.Skip("no email"), "snooze": idempotency.Snooze(time.Minute)}
	for end, hungErr := range ends {
		for name, store := range bothStores(t) { // a store each: LeaseInbox leases any due row
			t.Run(name+"/"+end, func(t *testing.T) {
				t.Parallel()
				res := taskAttemptAfterTakeover(t, store, func(_ context.Context, run idempotency.TaskRun[misuseArgs]) error {
					if run.Attempt == 1 { // the hung worker's, ending after attempt 2
						return hungErr
					}
					return nil
				})
				require.Equal(t, 1, res.Attempt, "the hung worker's attempt")
				require.Equal(t, idempotency.OutcomeFailed, res.Outcome)
				require.Empty(t, res.State, "its end was not recorded")
				require.True(t, errors.Is(res.Err, idempotency.ErrLeaseLost), "Result.Err %v", res.Err)
				if end == "error" {
					require.ErrorIs(t, res.Err, errFunc, "the func's error is kept")
				}
			})
		}
	}
}
