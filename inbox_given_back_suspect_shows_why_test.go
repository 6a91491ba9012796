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

// TestInboxGivenBackSuspectShowsWhy: an event leased alone because its
// worker died, and given back untried, is processing again under the
// lease it lost; its record still shows why, the lease that expired after
// its attempt, as the lease that took it showed, on both stores. (No test
// failed when the give-back cleared that error.)
func TestInboxGivenBackSuspectShowsWhy(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
			in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: clock.Now, Lease: time.Minute, Timeout: 10 * time.Second, Logger: discardLogger()})
			require.NoError(t, err)
			invoiceDeliverer(t, in)("evt_suspect")
			died, err := idempotency.LeaseInbox(t.Context(), in, 1) // its worker dies
			require.NoError(t, err)
			require.Len(t, died, 1)
			clock.Advance(time.Minute + time.Second)

			ls, err := idempotency.LeaseInbox(t.Context(), in, 1)
			require.NoError(t, err)
			require.Len(t, ls, 1)
			leased, _, err := in.Lookup(t.Context(), "evt_suspect")
			require.NoError(t, err)
			require.Contains(t, leased.LastError, "lease expired after attempt 1")

			idempotency.ReleaseLeased(t.Context(), in, ls[0])
			rec, _, err := in.Lookup(t.Context(), "evt_suspect")
			require.NoError(t, err)
			require.Equal(t, idempotency.InboxProcessing, rec.State)
			require.Equal(t, 1, rec.Attempt)
			require.Equal(t, leased.LastError, rec.LastError, "given back, it still shows why it is processing past its lease")
		})
	}
}
