package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// NewInbox takes a snapshot of the Handlers, as the godoc of Handlers and
// NewInbox and the README say: an event type registered after it is answered ignored by the
// inbox's Handler, even one made after the registration, and nothing is
// stored. NewHandler takes one too, as its godoc says: the synchronous
// Handler answers such a type ignored and claims nothing.
func TestInboxHandlersSnapshotAtNewInbox(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	syncStore := idempotency.NewMemoryStore()
	sync, err := idempotency.NewHandler(syncStore, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
		t.Error("a handler registered after NewInbox ran")
		return nil
	})
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, invoicePayload(t, "evt_late", "in_late", "acct_1"), testSecret)
	require.Equal(t, idempotency.OutcomeIgnored, a.Outcome)
	_, found, err := in.Lookup(t.Context(), "evt_late")
	require.NoError(t, err)
	require.False(t, found)
	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Zero(t, n)

	a = idempotencytest.Deliver(sync, invoicePayload(t, "evt_late_sync", "in_late", "acct_1"), testSecret)
	require.Equal(t, 200, a.Status, a.Body)
	require.Equal(t, idempotency.OutcomeIgnored, a.Outcome)
	_, found, err = syncStore.LookupEvent(t.Context(), "evt_late_sync")
	require.NoError(t, err)
	require.False(t, found, "an ignored event is not claimed")
}
