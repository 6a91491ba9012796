package idempotency_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxQueuesARetryOfAnEventAppliedSynchronously: a service moving
// from synchronous to inbox mode on one store. Stripe's retry of an event
// the synchronous Handler applied (its 200 lost) reaches the inbox's
// Handler, which answers it queued and stores it: it looks in the inbox
// alone, not in the ledger, so that a new event costs one insert. The
// worker finds the ledger's claim, applies nothing, and records the row
// processed, also for an event the synchronous Handler skipped, whose
// skip and reason stay in the ledger.
func TestInboxQueuesARetryOfAnEventAppliedSynchronously(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var applied atomic.Int32
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
				applied.Add(1)
				if ev.ID == "evt_moved_skipped" {
					return idempotency.Skip("applied by the hand-written receiver")
				}
				return nil
			})
			payload := invoicePayload(t, "evt_moved", "in_moved", "acct_1")
			sync, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(sync, payload, testSecret).Outcome)

			clock := idempotencytest.NewClock(time.Now())
			in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger()})
			require.NoError(t, err)
			h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			a := idempotencytest.Deliver(h, payload, testSecret)
			require.Equal(t, http.StatusOK, a.Status)
			require.Equal(t, `{"outcome":"queued"}`, a.Body, "the inbox's Handler does not read the ledger")

			n, err := in.WorkDue(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, n)
			rec, found, err := in.Lookup(t.Context(), "evt_moved")
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, idempotency.InboxProcessed, rec.State)
			require.Equal(t, int32(1), applied.Load(), "applied once, by the synchronous Handler")
			require.Equal(t, `{"outcome":"duplicate"}`, idempotencytest.Deliver(h, payload, testSecret).Body, "the inbox has it now")

			// One the synchronous Handler skipped: its row says processed
			// too, the ledger keeps the skip and its reason.
			skipped := invoicePayload(t, "evt_moved_skipped", "in_moved_skipped", "acct_1")
			require.Equal(t, idempotency.OutcomeSkipped, idempotencytest.Deliver(sync, skipped, testSecret).Outcome)
			require.Equal(t, `{"outcome":"queued"}`, idempotencytest.Deliver(h, skipped, testSecret).Body)
			n, err = in.WorkDue(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, n)
			rec, found, err = in.Lookup(t.Context(), "evt_moved_skipped")
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, idempotency.InboxProcessed, rec.State)
			require.Empty(t, rec.LastError)
			led, found, err := store.(idempotencytest.LookupStore).LookupEvent(t.Context(), "evt_moved_skipped")
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, idempotency.OutcomeSkipped, led.Outcome)
			require.Equal(t, "applied by the hand-written receiver", led.SkipReason)
			require.Equal(t, int32(2), applied.Load(), "run once each, by the synchronous Handler")
		})
	}
}
