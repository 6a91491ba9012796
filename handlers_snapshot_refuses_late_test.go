package idempotency_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// NewHandler and NewInbox take a snapshot of the Handlers, as the godoc
// of Handlers, NewHandler and NewInbox and the README say, after which On
// and OnCurrent refuse to register in it, naming the type and the
// function that took the snapshot: the snapshot would answer the late
// type's events ignored, 200, and Stripe would not send them again. (A
// late registration was accepted, and its events lost so.) Nothing is
// registered: the Handler and the inbox's still answer the type ignored,
// store nothing and run nothing. A second Handler on the same Handlers is
// made as the first was.
func TestHandlersRefuseARegistrationAfterTheSnapshot(t *testing.T) {
	t.Parallel()
	late := func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
		t.Error("a handler registered after the snapshot ran")
		return nil
	}
	fetch := func(context.Context, string, string) (*stripe.Invoice, error) {
		t.Error("a fetch registered after the snapshot ran")
		return nil, nil
	}
	for _, taker := range []string{"NewHandler", "NewInbox"} {
		t.Run(taker, func(t *testing.T) {
			t.Parallel()
			store := idempotency.NewMemoryStore()
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.created", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
			var h *idempotency.Handler
			var in *idempotency.Inbox
			if taker == "NewHandler" {
				var err error
				h, err = idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
				require.NoError(t, err)
			} else {
				var err error
				in, err = idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger()})
				require.NoError(t, err)
				h, err = in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
				require.NoError(t, err)
			}

			err := idempotency.OnSafely(hs, "invoice.paid", late)
			require.ErrorContains(t, err, `On: event type "invoice.paid" registered after `+taker+" took its snapshot")
			require.ErrorContains(t, err, "register every handler before "+taker)
			require.PanicsWithError(t, err.Error(), func() { idempotency.On(hs, "invoice.paid", late) })
			err = idempotency.OnCurrentSafely(hs, []string{"invoice.paid", "invoice.voided"}, fetch, late)
			require.ErrorContains(t, err, `OnCurrent: event type "invoice.paid" registered after `+taker+" took its snapshot")
			require.Equal(t, []string{"invoice.created"}, hs.EventTypes(), "nothing registered")

			a := idempotencytest.Deliver(h, invoicePayload(t, "evt_late", "in_late", "acct_1"), testSecret)
			require.Equal(t, 200, a.Status, a.Body)
			require.Equal(t, idempotency.OutcomeIgnored, a.Outcome)
			_, found, err := store.LookupEvent(t.Context(), "evt_late")
			require.NoError(t, err)
			require.False(t, found, "an ignored event is not claimed")
			if in != nil {
				_, found, err = in.Lookup(t.Context(), "evt_late")
				require.NoError(t, err)
				require.False(t, found, "an ignored event is not stored")
				n, err := in.WorkDue(t.Context())
				require.NoError(t, err)
				require.Zero(t, n)
			}

			_, err = idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err, "a second Handler on the Handlers")
		})
	}
}

// TestHandlersSnapshotTakenConcurrently: tests that share one Handlers
// make their Handlers and inboxes from it at once, in parallel; taking
// the snapshot records it without a race (the race detector watches),
// and a registration afterwards is refused.
func TestHandlersSnapshotTakenConcurrently(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.created", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if i%2 == 0 {
				_, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
				assert.NoError(t, err)
				return
			}
			_, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{Logger: discardLogger()})
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	err := onNothing[*stripe.Invoice](hs, "invoice.paid")
	require.ErrorContains(t, err, "took its snapshot of the Handlers")
}
