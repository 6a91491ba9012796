package idempotencytest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testInboxGivenBackKeepsItsLastAttempt: an event that failed, leased
// again and given back untried (WorkDue's context ended before its
// attempt started, as Run gives back what it leased ahead when it stops)
// shows its last attempt as it was: failed, at Attempt 1, begun when that
// attempt began, with its error, due at once and holding no lease. An
// operator reading it, or listing the failed events, still sees why it
// failed; the lease given back counts for nothing, and the next attempt
// is the second.
func testInboxGivenBackKeepsItsLastAttempt(t *testing.T, b StoreBackend) {
	cancel := context.CancelFunc(func() {})
	ib := newInboxBench(t, b, idempotency.InboxConfig{Workers: 2, Backoff: minuteBackoff},
		func(id string, attempt int) error {
			switch {
			case id == "evt_gb_failing" && attempt == 1:
				return errors.New("accounting API: 503")
			case id == "evt_gb_stop":
				cancel() // the caller stops: the event leased with this one is not started
			}
			return nil
		})
	failedAt := ib.clock.Now()
	ib.deliver(t, "evt_gb_failing", "invoice.paid", "in_gb_failing", 1756742400, idempotency.OutcomeQueued)
	ib.work(t, 1)
	failed := ib.record(t, "evt_gb_failing")
	require.Equal(t, idempotency.InboxFailed, failed.State)
	require.Equal(t, "accounting API: 503", failed.LastError)

	// evt_gb_stop came due before evt_gb_failing's retry: one lease takes
	// both, and evt_gb_stop's attempt runs first.
	ib.clock.Advance(30 * time.Second)
	ib.deliver(t, "evt_gb_stop", "invoice.paid", "in_gb_stop", 1756742400, idempotency.OutcomeQueued)
	ib.clock.Advance(30 * time.Second)
	ctx, stop := context.WithCancel(ctxT(t))
	defer stop()
	cancel = stop
	n, err := ib.inbox.WorkDue(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, n, "evt_gb_stop's attempt; evt_gb_failing's lease is given back")

	r := ib.record(t, "evt_gb_failing")
	require.Equal(t, idempotency.InboxFailed, r.State, "given back, it is as its last attempt left it")
	require.Equal(t, 1, r.Attempt, "the lease given back started no attempt")
	require.Equal(t, failed.LastError, r.LastError, "the error of its last attempt")
	require.True(t, failedAt.Equal(r.AttemptedAt), "AttemptedAt %s, want its last attempt's %s", r.AttemptedAt, failedAt)
	require.True(t, ib.clock.Now().Equal(r.NextAttemptAt), "NextAttemptAt %s, want %s: due at once", r.NextAttemptAt, ib.clock.Now())
	require.True(t, r.LeaseUntil.IsZero(), "given back: no lease held")
	require.True(t, r.FinishedAt.IsZero())
	listed, err := ib.inbox.List(ctxT(t), idempotency.InboxFilter{States: []idempotency.InboxState{idempotency.InboxFailed}, EventIDs: []string{"evt_gb_failing"}})
	require.NoError(t, err)
	require.Len(t, listed, 1, "listed among the failed events")

	ib.work(t, 1)
	r = ib.record(t, "evt_gb_failing")
	require.Equal(t, idempotency.InboxProcessed, r.State)
	require.Equal(t, 2, r.Attempt, "the attempt after the failed one is the second")
	require.Empty(t, r.LastError)
}
