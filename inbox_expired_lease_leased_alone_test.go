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

// TestInboxLeaseStopsBeforeAnExpiredLease: an event whose worker died is
// leased alone. A lease that finds events due before it takes them and
// stops short of it, however many it may take; the next lease takes it
// alone, on both stores. (No test failed when the memory store took it
// after the others in one lease.)
func TestInboxLeaseStopsBeforeAnExpiredLease(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
			in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
				Now: clock.Now, Lease: time.Minute, Timeout: 10 * time.Second, Logger: discardLogger(),
			})
			require.NoError(t, err)
			deliver := invoiceDeliverer(t, in)
			deliver("evt_died")
			died, err := idempotency.LeaseInbox(t.Context(), in, 1) // its worker dies
			require.NoError(t, err)
			require.Len(t, died, 1)
			deliver("evt_a")
			deliver("evt_b")
			clock.Advance(time.Minute + time.Second) // evt_died's lease expired, due after evt_a and evt_b

			first, err := idempotency.LeaseInbox(t.Context(), in, 10)
			require.NoError(t, err)
			require.ElementsMatch(t, []string{"evt_a", "evt_b"}, leasedIDs(first), "the due events, not the expired one after them")
			alone, err := idempotency.LeaseInbox(t.Context(), in, 10)
			require.NoError(t, err)
			require.Equal(t, []string{"evt_died"}, leasedIDs(alone), "the expired lease, alone")
			require.Equal(t, 2, alone[0].Attempt())
		})
	}
}
