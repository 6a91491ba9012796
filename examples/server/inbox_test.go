package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// startServer runs the example with args and returns a client for it; the
// server stops when the test ends.
func startServer(t *testing.T, args ...string) client {
	t.Helper()
	return startServerEnv(t, nil, io.Discard, args...)
}

// startServerEnv is startServer with env as the environment and the log
// written to stderr.
func startServerEnv(t *testing.T, env map[string]string, stderr io.Writer, args ...string) client {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0", "-secret", secret}, args...),
			func(k string) string { return env[k] }, stderr, ready)
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	select {
	case addr := <-ready:
		return client{t: t, url: "http://" + addr}
	case err := <-done:
		done <- err // for the cleanup, which would wait for ever
		t.Fatalf("run returned early: %v", err)
		return client{}
	}
}

// serve runs newServer's routes for svc on a test HTTP server, with a
// Mailer of its own and the logs discarded, until the test ends. It does
// not run the inbox's workers: runWorkers does, or the test drives them
// with WorkDue.
func serve(t *testing.T, svc service, inboxMode bool, cfg idempotency.InboxConfig) (client, *idempotency.Inbox, *Mailer) {
	t.Helper()
	discard := slog.New(slog.DiscardHandler)
	cfg.Logger = discard
	mailer := newMailer(discard)
	svc.mailer = mailer
	srv, err := newServer(svc, []string{secret}, discard, inboxMode, cfg)
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return client{t: t, url: ts.URL}, srv.inbox, mailer
}

// runWorkers runs the inbox's workers until the test ends or stop, which
// returns once Run has: every attempt the workers made is over, its
// AfterCommit funcs run.
func runWorkers(t *testing.T, inbox *idempotency.Inbox) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inbox.Run(ctx) }()
	stop = sync.OnceFunc(func() {
		cancel()
		require.NoError(t, <-done)
	})
	t.Cleanup(stop)
	return stop
}

// inboxStats is the answer of /inbox/stats.
type inboxStats struct {
	Counts      map[string]int `json:"counts"`       // events and tasks
	TaskCounts  map[string]int `json:"task_counts"`  // tasks
	LastAttempt *time.Time     `json:"last_attempt"` // null before any attempt
}

// inboxStats reads /inbox/stats.
func (c client) inboxStats() inboxStats {
	status, body := c.get("/inbox/stats")
	require.Equal(c.t, http.StatusOK, status, body)
	var st inboxStats
	require.NoError(c.t, json.Unmarshal([]byte(body), &st))
	return st
}

// drained waits until the workers have applied every stored event and run
// every task.
func (c client) drained() inboxStats {
	c.t.Helper()
	var st inboxStats
	require.Eventually(c.t, func() bool {
		st = c.inboxStats()
		return st.Counts["pending"]+st.Counts["processing"]+st.Counts["failed"] == 0
	}, 30*time.Second, 10*time.Millisecond, "the workers should apply every queued event and run every task")
	return st
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

	st := c.drained()
	require.Equal(t, 3, st.Counts["processed"], "the two events and the receipt task")
	require.Equal(t, 1, st.TaskCounts["processed"], "one receipt for the one paid invoice")
	require.Equal(t, 1, st.Counts["skipped"])
	require.NotNil(t, st.LastAttempt, "the workers attempted them")
	// The memory store shows an event processed as its transaction commits,
	// and applies the account's writes from its AfterCommit funcs, which
	// run after that: the account is awaited too, not read at once.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		status, body := c.get("/accounts/acct_1")
		assert.Equal(ct, 200, status)
		assert.JSONEq(ct, `{"id":"acct_1","credits":100,"receipts":1,"plan_until":"2025-10-01T16:00:00Z"}`, body)
	}, 10*time.Second, 5*time.Millisecond, "acct_1 as the workers left it")
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

// Without -inbox, run starts the inbox's workers too: they send the
// receipts, and /inbox/stats counts them.
func TestServerSyncRunsTheReceiptTasks(t *testing.T) {
	t.Parallel()
	c := startServer(t)
	_, body := c.deliver(invoiceEvent(t, "invoice.paid", "evt_sync_1", "acct_1"))
	require.Equal(t, `{"outcome":"processed"}`, body)
	st := c.drained()
	require.Equal(t, 1, st.TaskCounts["processed"])
	require.Equal(t, st.TaskCounts, st.Counts, "in synchronous mode the inbox holds tasks only")
}
