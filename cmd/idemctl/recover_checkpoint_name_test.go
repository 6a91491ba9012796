package main

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRecoverCheckpointNameTooLongIsUsage: a -checkpoint name no store can
// keep is a usage error, exit 2, and nothing is requested. It exited 1, as
// a failed recovery.
func TestRecoverCheckpointNameTooLongIsUsage(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	api := &eventsAPI{}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)

	r := idemctl(t, s.db, map[string]string{"STRIPE_SECRET_KEY": stripeKey},
		"recover", "-since", "2h", "-types", "invoice.paid", "-checkpoint", strings.Repeat("c", 1025), "-api-base", srv.URL)
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "Checkpoint")
	require.Empty(t, api.queries)
}
