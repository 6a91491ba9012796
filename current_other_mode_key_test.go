package idempotency_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

// TestRetrieveOtherModeKey: Stripe answers a key of the other mode than
// the object's (a test key asked for a live object) with 404
// resource_missing, its message saying that "a similar object exists in
// live mode". That is not an object the API no longer knows: with such a
// key every fetch is answered so, and OnCurrent would skip every event
// for good. Retrieve's error is ErrStripeAPI, not ErrObjectNotFound, and
// says which mode the object is in without quoting the message; the event
// fails (500: Stripe retries) and its handler does not run.
func TestRetrieveOtherModeKey(t *testing.T) {
	t.Parallel()
	const msg = "No such subscription: 'sub_1'; a similar object exists in live mode, but a test mode key was used to make this request."
	fetch := idempotency.Retrieve(func(context.Context, string, *stripe.SubscriptionRetrieveParams) (*stripe.Subscription, error) {
		return nil, &stripe.Error{HTTPStatusCode: http.StatusNotFound, Type: stripe.ErrorTypeInvalidRequest,
			Code: stripe.ErrorCodeResourceMissing, Msg: msg, RequestID: "req_1"}
	})
	_, err := fetch(t.Context(), "sub_1", "")
	require.ErrorIs(t, err, idempotency.ErrStripeAPI)
	require.NotErrorIs(t, err, idempotency.ErrObjectNotFound)
	require.Contains(t, err.Error(), "HTTP 404 invalid_request_error (resource_missing), request req_1: "+
		"the object exists in live mode: the API key is of the other mode")
	require.NotContains(t, err.Error(), "sub_1", "the message is not quoted")

	// Through a Handler, from Stripe's answer on the wire.
	a, res, _, ran := deliverRefusedFetch(t, http.StatusNotFound, []byte(`{"error":{"code":"resource_missing","doc_url":"https://stripe.com/docs/error-codes/resource-missing",`+
		`"message":"No such subscription: 'sub_1MowQVLkdIwHu7ixeRlqHVzs'; a similar object exists in test mode, but a live mode key was used to make this request.",`+
		`"param":"id","type":"invalid_request_error"}}`), fixture(t, "customer.subscription.updated"))
	require.Equal(t, http.StatusInternalServerError, a.Status, a.Body)
	require.NotEqual(t, idempotency.OutcomeSkipped, res.Outcome)
	require.ErrorIs(t, res.Err, idempotency.ErrStripeAPI)
	require.Contains(t, res.Err.Error(), "the object exists in test mode: the API key is of the other mode")
	require.False(t, ran, "the handler does not run")
}
