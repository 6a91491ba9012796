package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestOnCurrentUnrecognizedURLIsNotAMissingObject: a 404 that is not
// Stripe's resource_missing, such as the "Unrecognized request URL" of an
// API that does not know the path (a stripe-mock without the endpoint, a
// gateway that forwards the request elsewhere), says nothing of the
// object: the event fails (500, Stripe sends it again) instead of being
// skipped for good as an object the API no longer knows. A
// resource_missing 404 is still skipped. A base URL ending in /v1 is no
// way to get that 404: stripe-go strips the /v1, and the fetch reaches
// the API's own paths.
func TestOnCurrentUnrecognizedURLIsNotAMissingObject(t *testing.T) {
	t.Parallel()
	// The API knows the customers' path, where cus_1 is gone, and not the
	// subscriptions'.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", "req_unrecognized")
		w.WriteHeader(http.StatusNotFound)
		if id, ok := strings.CutPrefix(r.URL.Path, "/v1/customers/"); ok {
			_, _ = fmt.Fprintf(w, `{"error":{"code":"resource_missing","message":"No such customer: '%s'","param":"id","type":"invalid_request_error"}}`, id)
			return
		}
		_, _ = fmt.Fprintf(w, `{"error":{"message":"Unrecognized request URL (GET: %s).","type":"invalid_request_error"}}`, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	client := stripe.NewClient(fakeStripeKey, fakeBackends(srv.URL, nil))

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

	// The object itself missing is still a 404 to skip, also through a
	// base URL ending in /v1.
	for _, base := range []string{srv.URL, srv.URL + "/v1"} {
		customers := stripe.NewClient(fakeStripeKey, fakeBackends(base, nil))
		_, err = idempotency.Retrieve(customers.V1Customers.Retrieve)(t.Context(), "cus_1", "")
		require.ErrorIs(t, err, idempotency.ErrObjectNotFound, base)
	}
}
