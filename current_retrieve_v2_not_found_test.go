package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRetrieveV2ObjectNotFound: Retrieve of a stripe-go v2 Retrieve method
// reports an object the API answers resource_missing for as
// ErrObjectNotFound, as it does for a v1 method (stripe-go keeps no HTTP
// status of a v2 error answer, only its type and code): an OnCurrent
// handler of a thin event about a deleted event destination skips the
// event instead of failing it on every redelivery. A v2 404 without that
// code (an unrecognized URL) is still no missing object, and neither is
// the thin event's own event answered 404.
func TestRetrieveV2ObjectNotFound(t *testing.T) {
	t.Parallel()
	const (
		evID      = "evt_thin_ping"
		pingType  = "v2.core.event_destination.ping"
		destID    = "ed_test_61RCjiqdTDC91zgip41IqPCz"
		destsPath = "/v2/core/event_destinations/"
	)
	f := newFakeStripe()
	f.v2[evID] = fmt.Appendf(nil, `{"id":%q,"object":"v2.core.event","type":%q,"livemode":false,"created":"2024-09-26T17:46:22.134Z","data":null,"related_object":{"id":%q,"type":"v2.core.event_destination","url":"%s%s"}}`,
		evID, pingType, destID, destsPath, destID)
	mux := http.NewServeMux()
	mux.Handle("/v2/core/events/", f)
	mux.HandleFunc(destsPath+"{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		if r.PathValue("id") == "unrecognized" {
			_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","message":"Unrecognized request URL."}}`))
			return
		}
		_, _ = w.Write(fmt.Appendf(nil, `{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such event destination: %s"}}`, r.PathValue("id")))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	client := stripe.NewClient(fakeStripeKey, fakeBackends(srv.URL, nil))
	fetch := idempotency.Retrieve(client.V2CoreEventDestinations.Retrieve)

	_, err := fetch(t.Context(), destID, "")
	require.ErrorIs(t, err, idempotency.ErrStripeAPI)
	require.ErrorIs(t, err, idempotency.ErrObjectNotFound)
	_, err = fetch(t.Context(), "unrecognized", "")
	require.ErrorIs(t, err, idempotency.ErrStripeAPI)
	require.NotErrorIs(t, err, idempotency.ErrObjectNotFound, "an unknown URL is not a missing object")

	hs := idempotency.NewHandlers()
	ran := false
	idempotency.OnCurrent(hs, []string{pingType}, fetch,
		func(context.Context, idempotency.Tx, idempotency.Event[*stripe.V2EventDestination]) error {
			ran = true
			return nil
		})
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(), StripeClient: client,
	})
	require.NoError(t, err)
	notification := fmt.Appendf(nil, `{"id":%q,"object":"v2.core.event","type":%q,"livemode":false,"created":"2024-09-26T17:46:22.134Z","related_object":{"id":%q,"type":"v2.core.event_destination","url":"%s%s"}}`,
		evID, pingType, destID, destsPath, destID)
	a := idempotencytest.Deliver(h, notification, testSecret)
	require.Equal(t, idempotency.OutcomeSkipped, a.Outcome, a.Body)
	require.False(t, ran)

	// The thin event's own event missing is no missing object: the
	// notification names an event Stripe sent, and a 404 for it (another
	// mode's key, another context) fails the delivery, 500, so that
	// Stripe sends it again once the client is fixed.
	var res idempotency.Result
	h, err = idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(), StripeClient: client,
		OnResult: func(r idempotency.Result) { res = r },
	})
	require.NoError(t, err)
	delete(f.v2, evID)
	a = idempotencytest.Deliver(h, notification, testSecret)
	require.Equal(t, http.StatusInternalServerError, a.Status, a.Body)
	require.ErrorIs(t, res.Err, idempotency.ErrStripeAPI)
	require.NotErrorIs(t, res.Err, idempotency.ErrObjectNotFound)
}
