package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// startServer runs the example with args and returns a client for it; the
// server stops when the test ends.
func startServer(t *testing.T, args ...string) client {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0", "-secret", secret}, args...), noEnv, io.Discard, ready)
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	select {
	case addr := <-ready:
		return client{t: t, url: "http://" + addr}
	case err := <-done:
		t.Fatalf("run returned early: %v", err)
		return client{}
	}
}

// inboxCounts reads /inbox/stats.
func (c client) inboxCounts() map[string]int {
	status, body := c.get("/inbox/stats")
	require.Equal(c.t, http.StatusOK, status, body)
	var st struct {
		Counts map[string]int `json:"counts"`
	}
	require.NoError(c.t, json.Unmarshal([]byte(body), &st))
	return st.Counts
}

// drained waits until the workers have applied every stored event.
func (c client) drained() map[string]int {
	c.t.Helper()
	var counts map[string]int
	require.Eventually(c.t, func() bool {
		counts = c.inboxCounts()
		return counts["pending"]+counts["processing"]+counts["failed"] == 0
	}, 30*time.Second, 10*time.Millisecond, "the workers should apply every queued event")
	return counts
}

// exerciseInboxContract is exerciseContract in inbox mode: the webhook
// answers queued or duplicate, and the effect shows once a worker has
// applied the event.
func exerciseInboxContract(t *testing.T, c client) {
	status, body := c.deliver(invoiceEvent(t, "invoice.paid", "evt_inbox_1", "acct_1"))
	require.Equal(t, 200, status)
	require.Equal(t, `{"outcome":"queued"}`, body)
	_, body = c.deliver(invoiceEvent(t, "invoice.paid", "evt_inbox_1", "acct_1"))
	require.Equal(t, `{"outcome":"duplicate"}`, body)
	_, body = c.deliver(invoiceEvent(t, "invoice.payment_succeeded", "evt_inbox_2", "acct_1")) // the twin
	require.Equal(t, `{"outcome":"queued"}`, body)
	_, body = c.deliver(invoiceEvent(t, "invoice.paid", "evt_inbox_3", "")) // no account: skipped by the worker
	require.Equal(t, `{"outcome":"queued"}`, body)

	counts := c.drained()
	require.Equal(t, 2, counts["processed"])
	require.Equal(t, 1, counts["skipped"])
	status, body = c.get("/accounts/acct_1")
	require.Equal(t, 200, status)
	require.JSONEq(t, `{"id":"acct_1","credits":100,"receipts":1,"plan_until":"2025-10-01T16:00:00Z"}`, body)
	_, body = c.deliver(invoiceEvent(t, "invoice.paid", "evt_inbox_1", "acct_1"))
	require.Equal(t, `{"outcome":"duplicate"}`, body, "a processed event is still a duplicate")
}

func TestServerInboxMemory(t *testing.T) {
	t.Parallel()
	exerciseInboxContract(t, startServer(t, "-inbox"))
}

func TestServerInboxPostgres(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	exerciseInboxContract(t, startServer(t, "-inbox", "-database-url", db.URL))
	var credits int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT sum(credits) FROM accounts`).Scan(&credits))
	require.Equal(t, 100, credits)
}

// Without -inbox there is no inbox route.
func TestServerSyncHasNoInboxStats(t *testing.T) {
	t.Parallel()
	status, _ := startServer(t).get("/inbox/stats")
	require.Equal(t, http.StatusNotFound, status)
}
