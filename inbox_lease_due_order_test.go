package idempotency_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxLeaseReturnsTheEventsInDueOrder: a lease hands Run and WorkDue
// the events it takes in the order they came due, the longest due first,
// whatever the order they were stored in, on both stores: Run queues
// them so to its workers, and WorkDue applies them so. PostgreSQL is
// also run with the plans that update the rows in the order they are
// stored (no nested loop, no merge join), the order a larger table may
// get. (No test failed when PgxStore's lease returned them in the order
// it updated them.)
func TestInboxLeaseReturnsTheEventsInDueOrder(t *testing.T) {
	t.Parallel()
	stores := bothStores(t)
	stores["postgres, hash join"] = newPgBackendWithSettings(t, map[string]string{"enable_nestloop": "off", "enable_mergejoin": "off"}, nil).store
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			clock := idempotencytest.NewClock(start)
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
			in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
				Now: clock.Now, Lease: time.Minute, Timeout: 10 * time.Second, Logger: discardLogger(),
			})
			require.NoError(t, err)
			deliver := invoiceDeliverer(t, in)
			const n = 40
			var want []string
			for i := range n { // stored first, due last
				clock.Advance(-time.Second)
				id := fmt.Sprintf("evt_%02d", i)
				deliver(id)
				want = append([]string{id}, want...)
			}
			clock.Advance(time.Hour)
			leased, err := idempotency.LeaseInbox(t.Context(), in, n)
			require.NoError(t, err)
			got := make([]string, len(leased))
			for i, l := range leased {
				got[i] = l.EventID()
			}
			require.Equal(t, want, got, "the longest due first")
		})
	}
}
