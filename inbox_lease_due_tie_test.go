package idempotency_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestInboxLeaseBreaksDueTiesByEventID: events due at the same instant
// are taken in the order of their ids, on both stores, and that order
// decides where a lease stops before an expired lease due at that instant
// too: the events whose ids sort before it are taken, then the next lease
// takes it alone. (No test failed when PgxStore's lease ordered its
// candidates by due time alone, nor when the memory store's heap did.)
func TestInboxLeaseBreaksDueTiesByEventID(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in, clock, _ := queuedInvoice(t, store, idempotency.InboxConfig{Lease: time.Minute, Timeout: 10 * time.Second}, "evt_m_died")
			deliver := invoiceDeliverer(t, in)
			died, err := idempotency.LeaseInbox(t.Context(), in, 1) // its worker dies
			require.NoError(t, err)
			require.Len(t, died, 1)
			clock.Advance(time.Minute) // its lease expires now, as the events below come due
			var before, after []string
			for i := range 8 { // stored in no order of their ids
				for _, id := range []string{fmt.Sprintf("evt_z%d", 7-i), fmt.Sprintf("evt_a%d", 7-i)} {
					deliver(id)
				}
				before = append(before, fmt.Sprintf("evt_a%d", i))
				after = append(after, fmt.Sprintf("evt_z%d", i))
			}

			first, err := idempotency.LeaseInbox(t.Context(), in, 100)
			require.NoError(t, err)
			require.Equal(t, before, leasedIDs(first), "the events due at the expiry whose ids sort before the expired lease's, in id order")
			alone, err := idempotency.LeaseInbox(t.Context(), in, 100)
			require.NoError(t, err)
			require.Equal(t, []string{"evt_m_died"}, leasedIDs(alone), "the expired lease, alone")
			rest, err := idempotency.LeaseInbox(t.Context(), in, 100)
			require.NoError(t, err)
			require.Equal(t, after, leasedIDs(rest), "the rest, in id order")
		})
	}
}

// leasedIDs are the event ids of ls, in its order.
func leasedIDs(ls []idempotency.InboxLeased) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.EventID()
	}
	return out
}
