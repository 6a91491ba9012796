package main

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRunRecoverSinceNeedsKeyBeforeTheDatabase: -recover-since without
// STRIPE_SECRET_KEY is refused before the database is opened. It was
// checked after: with the database down, start-up waited out -db-wait and
// then blamed the database, never naming the flag.
func TestRunRecoverSinceNeedsKeyBeforeTheDatabase(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := "postgres://app@" + ln.Addr().String() + "/app" // refused from now on
	require.NoError(t, ln.Close())

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err = run(ctx, []string{"-addr", "127.0.0.1:0", "-secret", secret, "-recover-since=24h",
		"-database-url", down, "-db-wait", "1m"}, noEnv, discardWriter{}, nil)
	require.ErrorContains(t, err, "-recover-since needs STRIPE_SECRET_KEY")
}
