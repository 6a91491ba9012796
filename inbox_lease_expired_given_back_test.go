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

// An event leased alone because its worker died, and given back untried
// (Run stopping before its attempt could start), is still a suspect: the
// next lease takes it alone again, with no other event beside it to die
// with it, and without counting the attempt that never started. On either
// store.
func TestInboxGiveBackKeepsAnExpiredLeaseAlone(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
			in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: clock.Now, Lease: time.Minute, Timeout: 10 * time.Second, Logger: discardLogger()})
			require.NoError(t, err)
			deliver := invoiceDeliverer(t, in)
			lease := func() []string {
				t.Helper()
				ls, err := idempotency.LeaseInbox(t.Context(), in, 10)
				require.NoError(t, err)
				var ids []string
				for _, l := range ls {
					ids = append(ids, l.EventID())
				}
				return ids
			}
			deliver("evt_suspect")
			require.Equal(t, []string{"evt_suspect"}, lease()) // its worker dies
			clock.Advance(time.Minute + time.Second)
			deliver("evt_other")

			ls, err := idempotency.LeaseInbox(t.Context(), in, 10)
			require.NoError(t, err)
			require.Len(t, ls, 1, "leased alone")
			require.Equal(t, 2, ls[0].Attempt())
			idempotency.ReleaseLeased(t.Context(), in, ls[0])
			rec, _, err := in.Lookup(t.Context(), "evt_suspect")
			require.NoError(t, err)
			require.Equal(t, 1, rec.Attempt, "the attempt given back is not counted")

			require.Equal(t, []string{"evt_suspect"}, lease(), "given back, it is leased alone again")
			require.Equal(t, []string{"evt_other"}, lease())
		})
	}
}
