package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestCancelledAttemptIsNoTimeout: an attempt whose context is cancelled
// (WorkDue's, or Run's at shutdown) long before InboxConfig.Timeout fails
// with the cancellation, not ErrTimeout: Result.Err and the stored
// LastError say what happened. Both stores. (No test failed when every
// done context was reported as a timeout.)
func TestCancelledAttemptIsNoTimeout(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(ctx context.Context, _ idempotency.Tx, _ idempotency.Event[*stripe.Invoice]) error {
				cancel() // as Run's shutdown would
				<-ctx.Done()
				return ctx.Err()
			})
			var rs misuseResults
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger(), Now: clock.Now, OnResult: rs.add})
			require.NoError(t, err)
			h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			a := idempotencytest.Deliver(h, invoicePayload(t, "evt_cancelled", "in_cancelled", "acct_1"), testSecret)
			require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)

			_, err = in.WorkDue(ctx)
			require.ErrorIs(t, err, context.Canceled)
			res := rs.last(t)
			require.Equal(t, idempotency.OutcomeFailed, res.Outcome)
			require.Equal(t, idempotency.InboxFailed, res.State)
			require.ErrorIs(t, res.Err, context.Canceled)
			require.NotErrorIs(t, res.Err, idempotency.ErrTimeout, "cancelled, not timed out")
			rec, ok, err := in.Lookup(t.Context(), "evt_cancelled")
			require.NoError(t, err)
			require.True(t, ok)
			require.NotContains(t, rec.LastError, "timed out")
		})
	}
}
