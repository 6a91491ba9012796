package main

import (
	"net"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRecoverBeyondWindowIsUsageBeforeConnecting: -since beyond the Events
// API's window, with no checkpoint to continue, is a usage error, exit 2 as
// recover -h says, found before the database is opened: with the database
// down it is still exit 2, not the exit of a store that cannot be reached.
func TestRecoverBeyondWindowIsUsageBeforeConnecting(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := "postgres://idemctl@" + l.Addr().String() + "/nothing?connect_timeout=5"
	require.NoError(t, l.Close()) // nothing listens there now

	api := &eventsAPI{}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)

	r := idemctl(t, nil, map[string]string{"STRIPE_SECRET_KEY": stripeKey, "DATABASE_URL": down},
		"recover", "-since", "40d", "-types", "invoice.paid", "-api-base", srv.URL)
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "cannot reach back further")
	require.Empty(t, api.queries)
}
