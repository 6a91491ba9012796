package idempotency_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestOnCurrentEventKeepsTheEnvelope: an OnCurrent handler's event is the
// delivered event with Object replaced by the fetched object; the rest of
// the envelope (ObjectID, Previous, Raw, ...) is the delivery's, as Event
// documents it.
func TestOnCurrentEventKeepsTheEnvelope(t *testing.T) {
	t.Parallel()
	payload := eventPayload(t, "customer.subscription.updated", "evt_envelope", nil)
	var sent struct {
		Data struct {
			Object   struct{ ID string } `json:"object"`
			Previous json.RawMessage     `json:"previous_attributes"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(payload, &sent))
	require.NotEmpty(t, sent.Data.Previous)

	got := make(chan idempotency.Event[*stripe.Subscription], 1)
	hs := idempotency.NewHandlers()
	idempotency.OnCurrent(hs, []string{"customer.subscription.updated"},
		func(_ context.Context, id, _ string) (*stripe.Subscription, error) {
			return &stripe.Subscription{ID: id, Status: stripe.SubscriptionStatusActive}, nil
		},
		func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Subscription]) error {
			got <- ev
			return nil
		})
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, payload, testSecret)
	require.Equal(t, http.StatusOK, a.Status, a.Body)

	ev := <-got
	require.Equal(t, "evt_envelope", ev.ID)
	require.Equal(t, sent.Data.Object.ID, ev.Object.ID, "the fetched object")
	require.Equal(t, sent.Data.Object.ID, ev.ObjectID, "Event.ObjectID is data.object.id")
	require.JSONEq(t, string(sent.Data.Previous), string(ev.Previous), "Event.Previous is data.previous_attributes")
	require.JSONEq(t, string(payload), string(ev.Raw))
}
