package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/stripemock"
)

// TestRunRecoverSinceTheWholeWindow: -recover-since 720h, the most the
// flag takes (the Events API's 30 days), recovers; it is not refused as
// reaching a moment beyond the window, the time between reading the clock
// for -since and Recover's reading it.
func TestRunRecoverSinceTheWholeWindow(t *testing.T) {
	t.Parallel()
	apiBase := stripemock.Start(t)
	stderr := newLogWatch("recovery") // "stripe recovery: done", or the server's "recovery stopped"
	startServerEnv(t, map[string]string{"STRIPE_SECRET_KEY": "sk_test_123"}, stderr,
		"-stripe-api-base", apiBase, "-recover-since", "720h")
	select {
	case <-stderr.matched:
	case <-time.After(30 * time.Second):
		t.Fatalf("no recovery report within 30 s:\n%s", stderr)
	}
	log := stderr.String()
	require.NotContains(t, log, "recovery stopped", log)
	require.Contains(t, log, "stripe recovery: done", log)
}
