package main

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRunFlagBounds: the flags' documented bounds, at their edges:
// -prune-every takes a minute, -recover-since refuses a negative period,
// and -ingest-workers may not exceed -workers.
func TestRunFlagBounds(t *testing.T) {
	t.Parallel()
	c := startServer(t, "-prune-every=1m")
	status, _ := c.get("/healthz")
	require.Equal(t, http.StatusOK, status)

	err := runRefused(t, []string{"-secret", secret, "-recover-since=-1h"}, noEnv, io.Discard)
	require.ErrorContains(t, err, "-recover-since must be between 0 and")
	err = runRefused(t, []string{"-secret", secret, "-workers=2", "-ingest-workers=3"}, noEnv, io.Discard)
	require.ErrorContains(t, err, "-ingest-workers must be between 0 (half of -workers) and -workers (2), got 3")
}

// TestRunSecretsWithSpaces: -secret's list may have spaces after its
// commas, as people write lists; each secret verifies.
func TestRunSecretsWithSpaces(t *testing.T) {
	t.Parallel()
	c := startServer(t, "-secret", "whsec_old_one, "+secret+" ")
	c.deliverAll(idempotency.OutcomeProcessed, invoiceEvent(t, "invoice.paid", "evt_spaces", "acct_spaces"))
}

// TestInboxStatsOldestPending: /inbox/stats answers oldest_pending null
// when nothing is pending, and a time once something is; last_attempt
// null while nothing was attempted.
func TestInboxStatsOldestPending(t *testing.T) {
	t.Parallel()
	c, _, _ := serve(t, newStore(t, "memory"), false, idempotency.InboxConfig{}) // no workers: the receipt task stays pending
	oldest := func() any {
		status, body := c.get("/inbox/stats")
		require.Equal(t, http.StatusOK, status, body)
		var st map[string]any
		require.NoError(t, json.Unmarshal([]byte(body), &st))
		require.Contains(t, st, "oldest_pending", body)
		require.Contains(t, st, "last_attempt", body)
		require.Nil(t, st["last_attempt"], "no worker runs")
		return st["oldest_pending"]
	}
	require.Nil(t, oldest())
	c.deliverAll(idempotency.OutcomeProcessed, invoiceEvent(t, "invoice.paid", "evt_oldest", "acct_oldest"))
	require.NotNil(t, oldest())
}
