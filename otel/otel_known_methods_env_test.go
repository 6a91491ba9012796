package idempotencyotel_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	idempotencyotel "github.com/seed-a84bb619/idempotency/otel"
)

// TestKnownMethodsFromTheEnvironment: OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS,
// a comma-separated list of case-sensitive methods, replaces the methods
// the delivery span knows, as OpenTelemetry's HTTP conventions require of
// an instrumentation that reports others as _OTHER: a method it lists is
// reported, one it does not (POST here) is _OTHER. New reads it once. A
// list with an entry that is no HTTP method, or with none, is refused,
// naming the variable; empty, it is unset: the conventions' methods.
// Not parallel: it sets the environment.
func TestKnownMethodsFromTheEnvironment(t *testing.T) {
	const env = "OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS"
	t.Setenv(env, " GET , PURGE,QUERY")
	tel := newTelemetry(t, nil)
	t.Setenv(env, "POST") // read once, by New
	srv := httptest.NewServer(tel.synchronousHandler(t))
	defer srv.Close()
	for method, want := range map[string]string{
		http.MethodGet: http.MethodGet, "PURGE": "PURGE", "QUERY": "QUERY",
		http.MethodPut: "_OTHER", "purge": "_OTHER", "DELETE": "_OTHER",
	} {
		requireMethodReported(t, tel, srv, method, want)
	}

	for _, bad := range []string{"GET;POST", "GET,PO ST", "GET,\"POST\"", ",", " , "} {
		t.Setenv(env, bad)
		_, err := idempotencyotel.New(idempotencyotel.Config{})
		require.ErrorContains(t, err, env, "%q", bad)
	}

	t.Setenv(env, "")
	tel = newTelemetry(t, nil)
	srv2 := httptest.NewServer(tel.synchronousHandler(t))
	defer srv2.Close()
	requireMethodReported(t, tel, srv2, "PURGE", "_OTHER")
	requireMethodReported(t, tel, srv2, http.MethodPut, http.MethodPut)
}
