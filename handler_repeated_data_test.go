package idempotency_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestEnvelopeRepeatedDataRejected: a signed event with "data" twice, or
// data.previous_attributes twice, is refused, 400 invalid_event, nothing
// stored and no handler run. stripe-go's Event of the same body keeps
// the last "data" whole and merges repeated previous_attributes into one
// map; the handler's Event.Previous was the last previous_attributes
// seen, and survived a later "data" without them: the two disagreed on
// what changed.
func TestEnvelopeRepeatedDataRejected(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"data twice": `{"id":"evt_rep","object":"event","type":"customer.updated","created":1700000000,"livemode":false,` +
			`"data":{"object":{"id":"cus_1","object":"customer"},"previous_attributes":{"email":"old@example.com"}},` +
			`"data":{"object":{"id":"cus_1","object":"customer"}}}`,
		"previous_attributes twice": `{"id":"evt_rep","object":"event","type":"customer.updated","created":1700000000,"livemode":false,` +
			`"data":{"object":{"id":"cus_1","object":"customer"},"previous_attributes":{"email":"old@example.com"},"previous_attributes":{"name":"Old"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var seen stripe.Event
			require.NoError(t, json.Unmarshal([]byte(body), &seen))
			store := idempotency.NewMemoryStore()
			hs := idempotency.NewHandlers()
			var previous json.RawMessage
			idempotency.On(hs, "customer.updated", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Customer]) error {
				previous = ev.Previous
				return nil
			})
			h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}})
			require.NoError(t, err)
			a := idempotencytest.Deliver(h, []byte(body), testSecret)
			require.Equal(t, 400, a.Status, "the handler was given previous_attributes %s, stripe-go reads %v",
				previous, seen.Data.PreviousAttributes)
			require.JSONEq(t, `{"error":"invalid_event"}`, a.Body)
			_, found, err := store.LookupEvent(t.Context(), "evt_rep")
			require.NoError(t, err)
			require.False(t, found)
		})
	}
}
