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

// A Backoff that returns a negative wait is a wait of none: the failed
// event is due again at the time of its failure, not in the past, where it
// would be leased ahead of events that have waited longer and count as
// lagging behind (MaxIngestLag). No test failed when the clamp was left
// out. Both stores, on a fake clock.
func TestInboxNegativeBackoffIsDueAtOnce(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
				return errors.New("the downstream refused")
			})
			inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
				Now: clock.Now, Logger: discardLogger(), MaxAttempts: 3,
				Backoff: func(int) time.Duration { return -time.Hour },
			})
			require.NoError(t, err)
			h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, "evt_negative", "in_negative", "acct_1"), testSecret).Outcome)
			clock.Advance(time.Minute)
			leased, err := idempotency.LeaseInbox(t.Context(), inbox, 1)
			require.NoError(t, err)
			require.Len(t, leased, 1)
			idempotency.ApplyLeased(t.Context(), inbox, leased[0])
			rec, _, err := inbox.Lookup(t.Context(), "evt_negative")
			require.NoError(t, err)
			require.Equal(t, idempotency.InboxFailed, rec.State)
			require.True(t, rec.NextAttemptAt.Equal(clock.Now()), "due again at %s, not at %s", clock.Now(), rec.NextAttemptAt)
		})
	}
}
