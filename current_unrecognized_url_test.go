package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestOnCurrentUnrecognizedURLIsNotAMissingObject: a 404 that is not
// Stripe's resource_missing, such as the "Unrecognized request URL" Stripe
// answers a client whose base URL has a path of its own
// (https://api.stripe.com/v1), says nothing of the object: the event fails
// (500, Stripe sends it again) instead of being skipped for good as an
// object the API no longer knows. A resource_missing 404 is still skipped.
func TestOnCurrentUnrecognizedURLIsNotAMissingObject(t *testing.T) {
	t.Parallel()
	var body atomic.Value
	body.Store(`{"error":{"message":"Unrecognized request URL (GET: /v1/v1/subscriptions/sub_1).","type":"invalid_request_error"}}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", "req_unrecognized")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(body.Load().(string)))
	}))
	t.Cleanup(srv.Close)
	client := stripe.NewClient(fakeStripeKey, fakeBackends(srv.URL+"/v1", nil))

	fetch := idempotency.Retrieve(client.V1Subscriptions.Retrieve)
	ran := false
	hs := idempotency.NewHandlers()
	idempotency.OnCurrent(hs, []string{"customer.subscription.updated"}, fetch,
		func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Subscription]) error {
			ran = true
			return nil
		})
	store := idempotency.NewMemoryStore()
	h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	ev := fixture(t, "customer.subscription.updated")
	a := idempotencytest.Deliver(h, ev, testSecret)
	require.Equal(t, http.StatusInternalServerError, a.Status, a.Body)
	require.False(t, ran)
	_, err = fetch(t.Context(), "sub_1", "")
	require.ErrorIs(t, err, idempotency.ErrStripeAPI)
	require.NotErrorIs(t, err, idempotency.ErrObjectNotFound, "an unknown URL is not a missing object")
	events, err := store.ListEvents(t.Context(), idempotency.EventFilter{})
	require.NoError(t, err)
	require.Empty(t, events, "nothing is recorded: Stripe's redelivery, once the client is fixed, applies it")

	// The object itself missing is still a 404 to skip.
	body.Store(`{"error":{"code":"resource_missing","message":"No such subscription: 'sub_1'","param":"id","type":"invalid_request_error"}}`)
	_, err = fetch(t.Context(), "sub_1", "")
	require.ErrorIs(t, err, idempotency.ErrObjectNotFound)
}
