package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const secret = "whsec_server_test"

// invoiceEvent returns a fixture event (repository testdata) with its id and
// data.object.metadata replaced.
func invoiceEvent(t *testing.T, fixture, id, account string) []byte {
	t.Helper()
	raw, err := os.ReadFile("../../testdata/stripe-events/" + fixture + ".json")
	require.NoError(t, err)
	var ev map[string]any
	require.NoError(t, json.Unmarshal(raw, &ev))
	ev["id"] = id
	md := map[string]any{}
	if account != "" {
		md["account_id"] = account
	}
	ev["data"].(map[string]any)["object"].(map[string]any)["metadata"] = md
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	return b
}

type client struct {
	t   *testing.T
	url string
}

func (c client) deliver(payload []byte) (int, string) {
	req := idempotencytest.NewSignedRequest(c.url+"/webhook", payload, secret)
	req.RequestURI = ""
	return c.do(req)
}

func (c client) get(path string) (int, string) {
	req, err := http.NewRequest(http.MethodGet, c.url+path, nil)
	require.NoError(c.t, err)
	return c.do(req)
}

func (c client) do(req *http.Request) (int, string) {
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// exerciseContract runs the example's contract against a server.
func exerciseContract(t *testing.T, c client) {
	// Unknown account.
	status, _ := c.get("/accounts/acct_nobody")
	require.Equal(t, http.StatusNotFound, status)

	status, body := c.deliver(invoiceEvent(t, "invoice.paid", "evt_srv_1", "acct_1"))
	require.Equal(t, 200, status)
	require.Equal(t, `{"outcome":"processed"}`, body)
	status, body = c.get("/accounts/acct_1")
	require.Equal(t, 200, status)
	// The fixture's first line ends its period at 1759334400.
	require.JSONEq(t, `{"id":"acct_1","credits":100,"receipts":1,"plan_until":"2025-10-01T16:00:00Z"}`, body)

	// The same delivery again, and the twin event for the same invoice.
	status, body = c.deliver(invoiceEvent(t, "invoice.paid", "evt_srv_1", "acct_1"))
	require.Equal(t, 200, status)
	require.Equal(t, `{"outcome":"duplicate"}`, body)
	status, body = c.deliver(invoiceEvent(t, "invoice.payment_succeeded", "evt_srv_2", "acct_1"))
	require.Equal(t, 200, status)
	require.Equal(t, `{"outcome":"processed"}`, body)
	_, body = c.get("/accounts/acct_1")
	require.JSONEq(t, `{"id":"acct_1","credits":100,"receipts":1,"plan_until":"2025-10-01T16:00:00Z"}`, body)

	// No account in the metadata: skipped, never retried.
	_, body = c.deliver(invoiceEvent(t, "invoice.paid", "evt_srv_3", ""))
	require.Equal(t, `{"outcome":"skipped"}`, body)

	// Ignored type, bad signature.
	raw, err := os.ReadFile("../../testdata/stripe-events/checkout.session.completed.json")
	require.NoError(t, err)
	_, body = c.deliver(raw)
	require.Equal(t, `{"outcome":"ignored"}`, body)
	req, err := http.NewRequest(http.MethodPost, c.url+"/webhook", bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Stripe-Signature", "t=1,v1=00")
	status, _ = c.do(req)
	require.Equal(t, 400, status)

	status, body = c.get("/healthz")
	require.Equal(t, 200, status)
	require.JSONEq(t, `{"status":"ok"}`, body)
}

func TestServerMemory(t *testing.T) {
	t.Parallel()
	srv, err := newServer(idempotency.NewMemoryStore(), newMemoryAccounts(), []string{secret}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	exerciseContract(t, client{t: t, url: ts.URL})
}

func TestRunNeedsSecret(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	err := run(t.Context(), nil, func(string) string { return "" }, &stderr, nil)
	require.ErrorContains(t, err, "STRIPE_WEBHOOK_SECRET")
}

func TestRunServesAndStops(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	env := map[string]string{"STRIPE_WEBHOOK_SECRET": "whsec_a," + secret}
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, io.Discard, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("run returned early: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("server did not start")
	}
	c := client{t: t, url: "http://" + addr}
	status, body := c.deliver(invoiceEvent(t, "invoice.paid", "evt_run_1", "acct_run"))
	require.Equal(t, 200, status, body)
	cancel()
	require.NoError(t, <-done)
}

func TestServerPostgres(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-secret", secret, "-database-url", db.URL},
			func(string) string { return "" }, io.Discard, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("run returned early: %v", err)
	}
	exerciseContract(t, client{t: t, url: "http://" + addr})

	// The business rows and the ledger live in the test's schema.
	var credits, events int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT sum(credits) FROM accounts`).Scan(&credits))
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM idempotency_events`).Scan(&events))
	require.Equal(t, 100, credits)
	require.Equal(t, 3, events, "two processed, one skipped")
	cancel()
	require.NoError(t, <-done)
}

// TestServerHealthzFollowsTheDatabase stops PostgreSQL under a running
// server: /healthz answers 503, then 200 again once it is back.
func TestServerHealthzFollowsTheDatabase(t *testing.T) {
	cluster := pgtest.Server(t) // not parallel: it stops the shared server
	db := pgtest.New(t)
	store, accts, closeStore, err := openPostgres(t.Context(), db.URL)
	require.NoError(t, err)
	defer closeStore()
	srv, err := newServer(store, accts, []string{secret}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	c := client{t: t, url: ts.URL}

	status, _ := c.get("/healthz")
	require.Equal(t, http.StatusOK, status)
	cluster.Stop(t)
	status, body := c.get("/healthz")
	require.Equal(t, http.StatusServiceUnavailable, status, body)
	status, _ = c.deliver(invoiceEvent(t, "invoice.paid", "evt_down", "acct_down"))
	require.Equal(t, http.StatusServiceUnavailable, status)
	cluster.Start(t)
	require.Eventually(t, func() bool { s, _ := c.get("/healthz"); return s == http.StatusOK }, 10*time.Second, 10*time.Millisecond)
	status, body = c.deliver(invoiceEvent(t, "invoice.paid", "evt_down", "acct_down"))
	require.Equal(t, http.StatusOK, status, body)
}
