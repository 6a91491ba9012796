package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestEventTypesSorted: Handlers.EventTypes returns the registered types
// sorted, as it says, whatever the order of registration. (No test
// registered more than one type: without the sort it survived.)
func TestEventTypesSorted(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	fn := func(context.Context, idempotency.Tx, idempotency.Event[struct{}]) error { return nil }
	for _, typ := range []string{"invoice.paid", "charge.refunded", "customer.subscription.updated", "checkout.session.completed", "account.updated"} {
		idempotency.On(hs, typ, fn)
	}
	require.Equal(t, []string{"account.updated", "charge.refunded", "checkout.session.completed", "customer.subscription.updated", "invoice.paid"}, hs.EventTypes())
}

// TestEventCreatedZeroWhenAbsent: an event without created gives its
// handler the zero Event.Created, not the Unix epoch; one with created
// gives that second. (No test failed when an absent created became
// 1970-01-01.)
func TestEventCreatedZeroWhenAbsent(t *testing.T) {
	t.Parallel()
	created := map[string]time.Time{}
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[struct{}]) error {
		created[ev.ID] = ev.Created
		return nil
	})
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	for _, body := range []string{
		`{"id":"evt_no_created","object":"event","type":"invoice.paid","data":{"object":{"id":"in_1","object":"invoice"}}}`,
		`{"id":"evt_created","object":"event","type":"invoice.paid","created":1756742400,"data":{"object":{"id":"in_2","object":"invoice"}}}`,
	} {
		a := idempotencytest.Deliver(h, []byte(body), testSecret)
		require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
	}
	require.True(t, created["evt_no_created"].IsZero(), "Created of an event without created: %v", created["evt_no_created"])
	require.Equal(t, time.Unix(1756742400, 0), created["evt_created"])
}
