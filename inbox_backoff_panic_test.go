package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// A Backoff that panics (a table of waits indexed past its end) is logged
// and waits DefaultBackoff's time: the failed attempt is recorded and the
// event applied at its next attempt. The panic went up the worker's
// goroutine and ended the process, with the attempt unrecorded, and again
// at every attempt until the expired leases dead-lettered the event. Both
// stores, on a fake clock.
func TestInboxBackoffPanicWaitsTheDefault(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			hs := idempotency.NewHandlers()
			calls := 0
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
				calls++
				if calls == 1 {
					return errors.New("the downstream refused")
				}
				return nil
			})
			log, logs := testLogger()
			waits := []time.Duration{} // a table with no rows
			inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
				Now: clock.Now, Logger: log, MaxAttempts: 3,
				Backoff: func(n int) time.Duration { return waits[n-1] },
			})
			require.NoError(t, err)
			h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, "evt_backoff_panic", "in_backoff_panic", "acct_1"), testSecret).Outcome)

			apply := func() {
				t.Helper()
				leased, err := idempotency.LeaseInbox(t.Context(), inbox, 1)
				require.NoError(t, err)
				require.Len(t, leased, 1)
				idempotency.ApplyLeased(t.Context(), inbox, leased[0])
			}
			apply()
			rec, _, err := inbox.Lookup(t.Context(), "evt_backoff_panic")
			require.NoError(t, err)
			require.Equal(t, idempotency.InboxFailed, rec.State)
			wait := rec.NextAttemptAt.Sub(clock.Now())
			require.InDelta(t, float64(time.Second), float64(wait), float64(time.Second/10)+1, "DefaultBackoff(1) is 1 s ±10%%, got %s", wait)
			require.Contains(t, logs.String(), "InboxConfig.Backoff panicked")
			require.Contains(t, logs.String(), "index out of range")

			clock.Advance(wait)
			apply()
			rec, _, err = inbox.Lookup(t.Context(), "evt_backoff_panic")
			require.NoError(t, err)
			require.Equal(t, idempotency.InboxProcessed, rec.State)
			require.Equal(t, 2, rec.Attempt)
		})
	}
}
