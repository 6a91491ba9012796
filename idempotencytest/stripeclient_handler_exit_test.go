package idempotencytest_test

import (
	"net/http"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestNewStripeClientHandlerThatDoesNotReturn: a handler of NewStripeClient
// that panics, or ends its goroutine with runtime.Goexit (what t.FailNow
// and require do in a fake's assertion that fails), fails that request
// with an error at once, as a server that drops the connection does; the
// panic's value is in the error. The panic crashed the test binary, and
// the request waited for its context to end, which in a delivery's fetch
// or a test's t.Context() is never.
func TestNewStripeClientHandlerThatDoesNotReturn(t *testing.T) {
	t.Parallel()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/customers/cus_panic":
			panic("no fake for this customer")
		case "/v1/customers/cus_goexit":
			runtime.Goexit()
		}
		_, _ = w.Write([]byte(`{"id":"cus_1","object":"customer"}`))
	})
	client := idempotencytest.NewStripeClient("sk_test_key", h)

	_, err := client.V1Customers.Retrieve(t.Context(), "cus_panic", nil)
	require.ErrorContains(t, err, `idempotencytest: the handler of NewStripeClient panicked serving GET /v1/customers/cus_panic: no fake for this customer`)
	_, err = client.V1Customers.Retrieve(t.Context(), "cus_goexit", nil)
	require.ErrorContains(t, err, `idempotencytest: the handler of NewStripeClient did not return serving GET /v1/customers/cus_goexit (runtime.Goexit: t.FailNow in the handler?)`)

	cus, err := client.V1Customers.Retrieve(t.Context(), "cus_1", nil)
	require.NoError(t, err, "the client serves on after them")
	require.Equal(t, "cus_1", cus.ID)
}
