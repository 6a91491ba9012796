package idempotency_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// errSettleLostRefused is what attempt 1 fails with in failedSettleLost.
var errSettleLostRefused = errors.New("the downstream refused")

// failedSettleLost delivers event id to an inbox on PostgreSQL whose
// attempt 1 fails, and whose UPDATE recording that failure goes through
// while its answer is lost; between runs then, before the attempt looks
// its record up. It returns the inbox and the results OnResult gets.
func failedSettleLost(t *testing.T, id string, between func(context.Context, *idempotency.Inbox) error) (*idempotency.Inbox, *misuseResults) {
	t.Helper()
	var armed atomic.Bool
	var in *idempotency.Inbox
	var betweenErr error
	var once sync.Once
	store := settleLostStore(t, &armed, func() {
		once.Do(func() { betweenErr = between(context.Background(), in) })
	})
	var runs atomic.Int32
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
		if runs.Add(1) == 1 {
			armed.Store(true)
			return errSettleLostRefused
		}
		return nil
	})
	var rs misuseResults
	var err error
	in, err = idempotency.NewInbox(store, hs, idempotency.InboxConfig{
		MaxAttempts: 3, Backoff: func(int) time.Duration { return 0 }, Logger: discardLogger(), OnResult: rs.add,
	})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, id, "in_"+id, "acct_1"), testSecret).Outcome)

	ls, err := idempotency.LeaseInbox(t.Context(), in, 1)
	require.NoError(t, err)
	require.Len(t, ls, 1)
	idempotency.ApplyLeased(t.Context(), in, ls[0]) // fails; its failure is recorded, the answer lost
	require.False(t, armed.Load(), "the failure's settle was sent and its answer lost")
	require.NoError(t, betweenErr)
	return in, &rs
}

// requireFailedAsRecorded requires the first of rs's results to report
// attempt 1 of failedSettleLost failed as it was recorded (State failed,
// its error), not as an attempt whose lease was lost. rs.mu is held.
func requireFailedAsRecorded(t *testing.T, rs *misuseResults) {
	t.Helper()
	first := rs.all[0]
	require.Equal(t, 1, first.Attempt)
	require.Equal(t, idempotency.OutcomeFailed, first.Outcome)
	require.Equal(t, idempotency.InboxFailed, first.State, "its failure, as it was recorded")
	require.ErrorIs(t, first.Err, errSettleLostRefused)
	require.NotErrorIs(t, first.Err, idempotency.ErrLeaseLost)
}

// settleLostGivenBack is failedSettleLost with a lease that takes the
// event again and gives it back with giveBack, untried, before attempt 1
// looks its record up. It returns the event's record then, and requires
// attempt 1 reported once, by its worker, failed as it was recorded.
func settleLostGivenBack(t *testing.T, id string, giveBack func(context.Context, *idempotency.Inbox, idempotency.InboxLeased) error) idempotency.InboxRecord {
	t.Helper()
	in, rs := failedSettleLost(t, id, func(ctx context.Context, in *idempotency.Inbox) error {
		again, err := idempotency.LeaseInbox(ctx, in, 1)
		if err == nil && len(again) != 1 {
			err = errors.New("not leased again")
		}
		if err != nil {
			return err
		}
		return giveBack(ctx, in, again[0])
	})
	rec, _, err := in.Lookup(t.Context(), id)
	require.NoError(t, err)

	rs.mu.Lock()
	defer rs.mu.Unlock()
	require.Len(t, rs.all, 1, "attempt 1, by its worker: %v", rs.all)
	requireFailedAsRecorded(t, rs)
	return rec
}

// TestInboxSettleLostGivenBackReportedFailed: the UPDATE that records an
// event's failed attempt 1 went through while its answer was lost, and a
// lease took the event again and gave it back untried before the attempt
// looked its record up: failed at attempt 1 again, with attempt 1's start.
// Attempt 1 is reported failed as it was recorded (State failed, its
// error), not as an attempt whose lease was lost. (No test failed when
// the look-up did not take that record for attempt 1's own.)
func TestInboxSettleLostGivenBackReportedFailed(t *testing.T) {
	t.Parallel()
	rec := settleLostGivenBack(t, "evt_given_back", func(ctx context.Context, in *idempotency.Inbox, l idempotency.InboxLeased) error {
		idempotency.ReleaseLeased(ctx, in, l)
		return nil
	})
	require.Equal(t, idempotency.InboxFailed, rec.State, "given back as it was")
	require.Equal(t, 1, rec.Attempt)
}

// TestInboxSettleLostGivenBackPendingReportedFailed is
// TestInboxSettleLostGivenBackReportedFailed during a rolling deploy: the
// lease that took the event again was a process of an earlier version,
// which gave it back pending, at attempt 1 with attempt 1's start and
// error, not failed. Attempt 1 is still reported failed as it was
// recorded.
func TestInboxSettleLostGivenBackPendingReportedFailed(t *testing.T) {
	t.Parallel()
	rec := settleLostGivenBack(t, "evt_given_back_pending", func(ctx context.Context, in *idempotency.Inbox, l idempotency.InboxLeased) error {
		ok, err := idempotency.ReleaseLeasedPending(ctx, in, l)
		if err == nil && !ok {
			err = errors.New("not given back")
		}
		return err
	})
	require.Equal(t, idempotency.InboxPending, rec.State, "given back by the earlier version")
	require.Equal(t, 1, rec.Attempt)
	require.Equal(t, errSettleLostRefused.Error(), rec.LastError)
}

// TestInboxSettleLostRedrivenReportedAsItEnded: the UPDATE that records
// an event's failed attempt 1 went through while its answer was lost, and
// an operator redrove the event before the attempt looked its record up.
// The record no longer tells; the attempt's lease has not expired, so no
// lease took it over or will report it: its worker reports it to
// OnResult, failed with its own error. (No test failed when the look-up
// left a record that no longer tells to a lease, whatever the time.)
func TestInboxSettleLostRedrivenReportedAsItEnded(t *testing.T) {
	t.Parallel()
	in, rs := failedSettleLost(t, "evt_redriven", func(ctx context.Context, in *idempotency.Inbox) error {
		n, err := in.Redrive(ctx, idempotency.RedriveFilter{EventIDs: []string{"evt_redriven"}, States: []idempotency.InboxState{idempotency.InboxFailed}})
		if err == nil && n != 1 {
			err = errors.New("not redriven")
		}
		return err
	})
	rec, _, err := in.Lookup(t.Context(), "evt_redriven")
	require.NoError(t, err)
	require.Equal(t, idempotency.InboxPending, rec.State, "redriven")

	rs.mu.Lock()
	defer rs.mu.Unlock()
	require.Len(t, rs.all, 1, "attempt 1, by its worker: %v", rs.all)
	first := rs.all[0]
	require.Equal(t, 1, first.Attempt)
	require.Equal(t, idempotency.OutcomeFailed, first.Outcome)
	require.ErrorIs(t, first.Err, errSettleLostRefused)
	require.NotErrorIs(t, first.Err, idempotency.ErrLeaseExpired, "its lease had not expired: no lease reports it")
}
