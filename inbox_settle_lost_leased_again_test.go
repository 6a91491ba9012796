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

// TestInboxSettleLostLeasedAgainReportedFailed: the UPDATE that records
// an event's failed attempt 1 went through while its answer was lost, and
// a lease took the event again (its retry due at once) before the attempt
// looked its record up: processing at attempt 2, with attempt 1's failure
// as its error, not the one a lease that takes an expired attempt over
// writes. Attempt 1 is reported once, failed as it was recorded (State
// failed, its error), by its worker: attempt 2 did not take an expired
// lease over, and reports nothing for it.
func TestInboxSettleLostLeasedAgainReportedFailed(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	var in *idempotency.Inbox
	var again []idempotency.InboxLeased
	var leaseErr error
	var leaseOnce sync.Once
	store := settleLostStore(t, &armed, func() {
		leaseOnce.Do(func() { again, leaseErr = idempotency.LeaseInbox(context.Background(), in, 1) })
	})

	refused := errors.New("the downstream refused")
	var runs atomic.Int32
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
		if runs.Add(1) == 1 {
			armed.Store(true)
			return refused
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
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, "evt_leased_again", "in_leased_again", "acct_1"), testSecret).Outcome)

	n, err := in.WorkDue(t.Context()) // attempt 1 fails; its failure is recorded, the answer lost
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.False(t, armed.Load(), "the failure's settle was sent and its answer lost")
	require.NoError(t, leaseErr)
	require.Len(t, again, 1, "leased again before the look-up")
	require.Equal(t, 2, again[0].Attempt())

	idempotency.ApplyLeased(t.Context(), in, again[0])
	rs.mu.Lock()
	defer rs.mu.Unlock()
	require.Len(t, rs.all, 2, "attempt 1 by its worker, attempt 2: %v", rs.all)
	first := rs.all[0]
	require.Equal(t, 1, first.Attempt)
	require.Equal(t, idempotency.OutcomeFailed, first.Outcome)
	require.Equal(t, idempotency.InboxFailed, first.State, "its failure, as it was recorded")
	require.ErrorIs(t, first.Err, refused)
	require.NotErrorIs(t, first.Err, idempotency.ErrLeaseLost)
	require.Equal(t, 2, rs.all[1].Attempt)
	require.Equal(t, idempotency.InboxProcessed, rs.all[1].State)
}
