package main

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRecoverFutureSinceIsUsage: a -since in the future is a bad time,
// exit 2 as the exit codes say, and nothing is requested.
func TestRecoverFutureSinceIsUsage(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	api := &eventsAPI{}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)

	future := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	r := idemctl(t, s.db, map[string]string{"STRIPE_SECRET_KEY": stripeKey},
		"recover", "-since", future, "-types", "invoice.paid", "-api-base", srv.URL)
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "is in the future")
	require.Empty(t, api.queries)
}
