package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestRunLogsAFailedInboxScrape: a scrape that cannot read the inbox's
// stats is logged at Warn in the server's log, with the store's error, and
// the inbox's gauges are left out of that scrape. OpenTelemetry's error
// handler printed it instead, a plain line of package log beside the
// server's.
func TestRunLogsAFailedInboxScrape(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	logs := newLogWatch("serving metrics")
	startServerEnv(t, nil, logs, "-role", "receiver", "-inbox", "-database-url", db.URL, "-metrics-addr", "127.0.0.1:0")
	_, err := db.Pool.Exec(t.Context(), `ALTER TABLE idempotency_inbox RENAME TO idempotency_inbox_gone`)
	require.NoError(t, err)

	status, page := metricsOf(t, logs).get("")
	require.Equal(t, http.StatusOK, status, "the other metrics are still served")
	require.NotContains(t, page, "idempotency_inbox_oldest_pending_age_seconds")
	require.Regexp(t, `level=WARN msg="idempotencyotel: cannot read the inbox's stats; its gauges are left out of this collection" error="idempotency: inbox stats: .*idempotency_inbox`, logs.String())
}
