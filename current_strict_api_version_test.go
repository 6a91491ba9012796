package idempotency_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// StrictAPIVersion guards handlers that decode the payload's data.object.
// An OnCurrent handler is given the object fetched from the API, at the
// client's version, so an event of another release train is applied, in
// both modes, instead of refused (400) and sent again by Stripe for days.
// A handler of the payload is still refused such an event.
func TestStrictAPIVersionAppliesOnCurrentEvents(t *testing.T) {
	t.Parallel()
	clover := fixture(t, "customer.subscription.updated")
	clover = bytes.Replace(clover, []byte(`"api_version": "2025-08-27.basil"`), []byte(`"api_version": "2025-09-30.clover"`), 1)
	require.Contains(t, string(clover), "2025-09-30.clover", "the fixture's api_version was replaced")

	var fetched []string
	hs := idempotency.NewHandlers()
	idempotency.OnCurrent(hs, []string{"customer.subscription.updated"},
		func(_ context.Context, id, _ string) (*stripe.Subscription, error) {
			fetched = append(fetched, id)
			return &stripe.Subscription{ID: id, Status: stripe.SubscriptionStatusActive}, nil
		},
		func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Subscription]) error { return nil })
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
	cfg := idempotency.Config{Secrets: []string{testSecret}, StrictAPIVersion: true, Logger: discardLogger()}

	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, cfg)
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, clover, testSecret)
	require.Equal(t, 200, a.Status, a.Body)
	require.JSONEq(t, `{"outcome":"processed"}`, a.Body)
	require.Len(t, fetched, 1)

	a = idempotencytest.Deliver(h, fixture(t, "invoice.paid.api_version-clover"), testSecret)
	require.Equal(t, 400, a.Status, "a handler of the payload is still refused another release train")

	inbox, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	ih, err := inbox.Handler(cfg)
	require.NoError(t, err)
	a = idempotencytest.Deliver(ih, clover, testSecret)
	require.Equal(t, 200, a.Status, a.Body)
	require.JSONEq(t, `{"outcome":"queued"}`, a.Body)
}
