package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// metricsOf returns a client for the metrics a server logged to logs it
// serves ("serving metrics", logged before it listens).
func metricsOf(t *testing.T, logs *logWatch) client {
	t.Helper()
	m := regexp.MustCompile(`msg="serving metrics" url=(\S+)`).FindStringSubmatch(logs.String())
	require.NotNil(t, m, "no metrics address in the log:\n%s", logs)
	return client{t: t, url: m[1]}
}

// TestRunReceiverAndWorkerApart: a -role receiver and a -role worker on one
// database split the inbox. The receiver stores and answers the
// deliveries and applies nothing; the worker, started without a signing
// secret, applies each event once and runs the receipt task once, and
// answers a delivery 404, storing nothing. Both serve the read routes,
// and both say at start that they run the inbox (the worker logged
// inbox=false, its -inbox unset, which reads as if it applied nothing).
func TestRunReceiverAndWorkerApart(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	receiverLogs := newLogWatch("serving metrics")
	receiver := startServerEnv(t, nil, receiverLogs, "-role", "receiver", "-inbox", "-database-url", db.URL, "-metrics-addr", "127.0.0.1:0")

	_, body := receiver.deliver(invoiceEvent(t, "invoice.paid", "evt_role_1", "acct_role"))
	require.Equal(t, `{"outcome":"queued"}`, body)
	_, body = receiver.deliver(invoiceEvent(t, "invoice.payment_succeeded", "evt_role_2", "acct_role")) // the twin
	require.Equal(t, `{"outcome":"queued"}`, body)
	_, body = receiver.deliver(invoiceEvent(t, "invoice.paid", "evt_role_1", "acct_role"))
	require.Equal(t, `{"outcome":"duplicate"}`, body)
	st := receiver.inboxStats()
	require.Equal(t, 2, st.Counts["pending"], "stored, not applied: %v", st)
	status, _ := receiver.get("/accounts/acct_role")
	require.Equal(t, http.StatusNotFound, status)

	workerLogs := newLogWatch("serving metrics")
	addr, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-role", "worker", "-database-url", db.URL, "-metrics-addr", "127.0.0.1:0"}, noEnv, workerLogs)
	t.Cleanup(func() { require.NoError(t, stop()) })
	worker := client{t: t, url: "http://" + addr}

	st = receiver.drained()
	require.Equal(t, 3, st.Counts["processed"], "the two events and the receipt task: %v", st)
	require.Equal(t, 1, st.TaskCounts["processed"], "one receipt for the one paid invoice")
	for _, c := range []client{receiver, worker} {
		status, body := c.get("/accounts/acct_role")
		require.Equal(t, http.StatusOK, status, body)
		require.JSONEq(t, `{"id":"acct_role","credits":100,"receipts":1,"plan_until":"2025-10-01T16:00:00Z"}`, body)
		status, _ = c.get("/healthz")
		require.Equal(t, http.StatusOK, status)
	}
	var credits int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT sum(credits) FROM accounts`).Scan(&credits))
	require.Equal(t, 100, credits)

	// The worker made every attempt, each once; the receiver none.
	workerMetrics, receiverMetrics := metricsOf(t, workerLogs), metricsOf(t, receiverLogs)
	require.Eventually(t, func() bool { // counted as each attempt's end is recorded
		_, page := workerMetrics.get("")
		return regexp.MustCompile(`(?m)^idempotency_attempts_total\{[^}]*kind="task"[^}]*outcome="processed"[^}]*\} 1$`).MatchString(page) &&
			regexp.MustCompile(`(?m)^idempotency_attempts_total\{[^}]*kind="event"[^}]*outcome="processed"[^}]*\} 2$`).MatchString(page)
	}, 10*time.Second, 10*time.Millisecond, "the worker's attempts: two events and one task")
	_, page := workerMetrics.get("")
	require.Len(t, regexp.MustCompile(`(?m)^idempotency_attempts_total\{`).FindAllString(page, -1), 2, "no other attempt:\n%s", page)
	_, page = receiverMetrics.get("")
	require.NotContains(t, page, "idempotency_attempts_total", "the receiver attempted nothing")
	require.Equal(t, 1, strings.Count(workerLogs.String(), `msg="email sent"`), workerLogs.String())
	require.NotContains(t, receiverLogs.String(), `msg="email sent"`)

	status, body = worker.deliver(invoiceEvent(t, "invoice.paid", "evt_role_3", "acct_role"))
	require.Equal(t, http.StatusNotFound, status, body)
	require.Equal(t, st, worker.inboxStats(), "the worker stored nothing")

	// Started without -inbox, the worker applies the inbox's events: its
	// start line says so, as the receiver's does.
	require.Contains(t, workerLogs.String(), "inbox=true role=worker")
	require.Contains(t, receiverLogs.String(), "inbox=true role=receiver")
}

// TestRunRefusesRoleCombinationsAtOnce: a -role that is none, or one with
// flags it cannot work with, is refused before the database is tried,
// naming the flags (exit 2).
func TestRunRefusesRoleCombinationsAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no such role", []string{"-role", "both"}, `-role must be all, receiver or worker, got "both"`},
		{"receiver without inbox", []string{"-role", "receiver"}, "-role receiver needs -inbox: without it the webhook applies each event itself"},
		{"receiver with workers", []string{"-role", "receiver", "-inbox", "-workers", "4", "-mail-url", "http://127.0.0.1:1/"},
			"-role receiver runs no workers, and -workers, -mail-url set what they do"},
		{"receiver with ingest workers", []string{"-role", "receiver", "-inbox", "-ingest-workers", "2"}, "-role receiver runs no workers, and -ingest-workers set"},
		{"receiver with a lease", []string{"-role", "receiver", "-inbox", "-lease", "5s", "-attempt-timeout", "3s"},
			"-role receiver runs no workers, and -lease, -attempt-timeout set what they do"},
		{"receiver with receipt emails", []string{"-role", "receiver", "-inbox", "-receipt-emails=false"}, "-role receiver runs no workers, and -receipt-emails set"},
		{"worker with ingest workers", []string{"-role", "worker", "-ingest-workers", "2"}, "-role worker serves no webhook, and -ingest-workers set what it does"},
		{"ingest workers without inbox", []string{"-ingest-workers", "2"}, "-ingest-workers sets how many workers apply events while this process stores deliveries, with -inbox"},
		{"worker recovering", []string{"-role", "worker", "-recover-since", "1h"}, "-role worker serves no webhook, and -recover-since set what it does"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.ErrorContains(t, refusedBeforeTheDatabase(t, tc.args...), tc.want)
		})
	}
}

// TestRunRefusesRolesOnTheMemoryStore: a receiver or a worker without
// -database-url is refused (exit 2), naming it: on the in-memory store no
// other process sees its events.
func TestRunRefusesRolesOnTheMemoryStore(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"-role receiver -inbox": "-role receiver needs -database-url (or DATABASE_URL): on the in-memory store no worker of another process sees the events it stores",
		"-role worker":          "-role worker needs -database-url (or DATABASE_URL): on the in-memory store it sees no other process's events",
	} {
		err := runRefused(t, append([]string{"-secret", secret}, strings.Fields(args)...), noEnv, io.Discard)
		var usage *usageError
		require.ErrorAs(t, err, &usage, "exits 2")
		require.EqualError(t, err, want)
	}
}
