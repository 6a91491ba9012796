package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/stripemock"
)

// TestRunRecoverSince: -recover-since replays the Events API's events at
// start through the webhook path. Against stripe-mock, which lists a
// sample event of a type the server has no handler for, whatever the
// cursor, the run ends with its report in the log: two listings, both
// ignored.
func TestRunRecoverSince(t *testing.T) {
	t.Parallel()
	apiBase := stripemock.Start(t)
	stderr := newLogWatch("stripe recovery: done")
	startServerEnv(t, map[string]string{"STRIPE_SECRET_KEY": "sk_test_123"}, stderr,
		"-stripe-api-base", apiBase, "-recover-since", "72h")
	select {
	case <-stderr.matched:
	case <-time.After(30 * time.Second):
		t.Fatalf("no recovery report within 30 s:\n%s", stderr)
	}
	log := stderr.String()
	require.Contains(t, log, "listed=2", log)
	require.Contains(t, log, "ignored=2", log)
	require.Contains(t, log, "checkpoint=examples-server", log)
	require.NotContains(t, log, "sk_test_123", "the key is never logged")
}

// TestRunRecoverSinceNeedsKey: without STRIPE_SECRET_KEY, or beyond the
// Events API's 30 days, the server refuses to start.
func TestRunRecoverSinceNeedsKey(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"-recover-since=24h":  "-recover-since needs STRIPE_SECRET_KEY",
		"-recover-since=721h": "-recover-since must be between 0 and 720h0m0s",
	} {
		err := runRefused(t, []string{"-secret", secret, args}, noEnv, discardWriter{})
		require.ErrorContains(t, err, want, args)
	}
}

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// TestRunPruneEveryBounds: -prune-every is off (0) or at least a minute.
func TestRunPruneEveryBounds(t *testing.T) {
	t.Parallel()
	err := runRefused(t, []string{"-secret", secret, "-prune-every=30s"}, noEnv, discardWriter{})
	require.ErrorContains(t, err, "-prune-every must be 0 (off) or at least a minute")
}
