package idempotencytest_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestNewStripeClientRequestIsAsAServerReceivesIt: the handler of
// NewStripeClient is given a request as an http.Server gives one, its
// RequestURI the path and query sent, so that a handler that reads it
// (a logging middleware, a router of its own) sees what it would over a
// network. (No test failed when RequestURI was left empty.)
func TestNewStripeClientRequestIsAsAServerReceivesIt(t *testing.T) {
	t.Parallel()
	seen := make(chan *http.Request, 1)
	client := idempotencytest.NewStripeClient("sk_test_key", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r
		_, _ = w.Write([]byte(`{"id":"cus_1","object":"customer"}`))
	}))
	params := &stripe.CustomerRetrieveParams{}
	params.AddExpand("default_source")
	_, err := client.V1Customers.Retrieve(t.Context(), "cus_1", params)
	require.NoError(t, err)
	r := <-seen
	require.Equal(t, r.URL.RequestURI(), r.RequestURI)
	require.Equal(t, "/v1/customers/cus_1", r.URL.Path)
	require.Equal(t, []string{"default_source"}, r.URL.Query()["expand[0]"])
}
