package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

func TestMain(m *testing.M) {
	// A ping on a busy machine can take seconds: /healthz answers 503
	// here only when the store fails, as the tests that stop it want.
	healthzTimeout = time.Minute
	if os.Getenv(mainChildEnv) != "" { // a test runs the command: see mainCommand
		if grace, err := time.ParseDuration(os.Getenv(mainChildGraceEnv)); err == nil {
			deliveriesGrace = grace
		}
		main()
		os.Exit(0)
	}
	os.Exit(pgtest.Main(m))
}

const secret = "whsec_server_test"

// startupWait bounds a test's wait for PostgreSQL to serve the store: the
// -db-wait of its openPostgres (a new schema's migrations and business
// tables), or a pool reaching a restarted cluster. A busy CI machine took
// over a second for the tables alone; a wait that succeeds costs nothing.
const startupWait = 30 * time.Second

// invoiceEvent returns a fixture event (repository testdata) with its id and
// data.object.metadata replaced.
func invoiceEvent(t *testing.T, fixture, id, account string) []byte {
	t.Helper()
	return invoiceEventFor(t, fixture, id, "", account)
}

// invoiceEventFor is invoiceEvent about another invoice: data.object.id is
// invoice unless it is empty.
func invoiceEventFor(t *testing.T, fixture, id, invoice, account string) []byte {
	t.Helper()
	raw, err := os.ReadFile("../../testdata/stripe-events/" + fixture + ".json")
	require.NoError(t, err)
	metadata := map[string]string{}
	if account != "" {
		metadata["account_id"] = account
	}
	fields := map[string]any{"id": id, "data.object.metadata": metadata}
	if invoice != "" {
		fields["data.object.id"] = invoice
	}
	return idempotencytest.Derive(raw, fields)
}

// testClient is the tests' HTTP client, on a transport of their own.
// http.DefaultTransport's idle connections are closed by every
// httptest.Server.Close, another test's too, and a request about to reuse
// one fails ("http: CloseIdleConnections called"). Without keep-alives it
// keeps no idle connection to close.
var testClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

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
	resp, err := testClient.Do(req)
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

	// The workers run next to the synchronous handler: one receipt sent.
	st := c.drained()
	require.Equal(t, 1, st.TaskCounts["processed"], "one receipt task for the one paid invoice")
	require.Equal(t, st.TaskCounts, st.Counts, "the inbox holds the task alone: the events were applied in the requests")
}

func TestServerMemory(t *testing.T) {
	t.Parallel()
	c, inbox, _ := serve(t, memoryService(), false, idempotency.InboxConfig{})
	runWorkers(t, inbox)
	exerciseContract(t, c)
}

func TestRunNeedsSecret(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	err := runRefused(t, nil, noEnv, &stderr)
	require.ErrorContains(t, err, "STRIPE_WEBHOOK_SECRET")
}

// startRun runs the server with args until stop, which returns run's
// error, and returns the address it listens on once it does.
func startRun(t *testing.T, args []string, getenv func(string) string, stderr io.Writer) (addr string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, getenv, stderr, ready) }()
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("run returned early: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("server did not start")
	}
	return addr, func() error {
		cancel()
		return <-done
	}
}

// runRefused runs the server with args, which it must refuse to start
// with, and returns run's error. Should run serve instead (on an address
// of its own) or neither, the test fails rather than hang.
func runRefused(t *testing.T, args []string, getenv func(string) string, stderr io.Writer) error {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), getenv, stderr, ready) }()
	select {
	case err := <-done:
		return err
	case addr := <-ready:
		cancel()
		<-done
		t.Fatalf("run served on %s instead of refusing %q", addr, args)
	case <-time.After(30 * time.Second):
		t.Fatalf("run neither refused %q nor served within 30 s", args)
	}
	return nil
}

func TestRunServesAndStops(t *testing.T) {
	t.Parallel()
	env := map[string]string{"STRIPE_WEBHOOK_SECRET": "whsec_a," + secret}
	addr, stop := startRun(t, []string{"-addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, io.Discard)
	c := client{t: t, url: "http://" + addr}
	status, body := c.deliver(invoiceEvent(t, "invoice.paid", "evt_run_1", "acct_run"))
	require.Equal(t, 200, status, body)
	require.NoError(t, stop())
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
	svc, closeStore, err := openPostgres(t.Context(), db.URL, startupWait, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer closeStore()
	c, _, _ := serve(t, svc, false, idempotency.InboxConfig{})

	status, _ := c.get("/healthz")
	require.Equal(t, http.StatusOK, status)
	cluster.Stop(t)
	status, body := c.get("/healthz")
	require.Equal(t, http.StatusServiceUnavailable, status, body)
	status, _ = c.deliver(invoiceEvent(t, "invoice.paid", "evt_down", "acct_down"))
	require.Equal(t, http.StatusServiceUnavailable, status)
	cluster.Start(t)
	// The pool dials the restarted server again: cluster work, which a
	// busy machine takes seconds for.
	require.Eventually(t, func() bool { s, _ := c.get("/healthz"); return s == http.StatusOK }, startupWait, 10*time.Millisecond)
	status, body = c.deliver(invoiceEvent(t, "invoice.paid", "evt_down", "acct_down"))
	require.Equal(t, http.StatusOK, status, body)
}

// logWatch is run's stderr in a test: it keeps what was written and closes
// matched at the first write (slog writes a record in one) that contains
// match.
type logWatch struct {
	match   string
	matched chan struct{}

	mu   sync.Mutex
	out  strings.Builder
	once sync.Once
}

func newLogWatch(match string) *logWatch {
	return &logWatch{match: match, matched: make(chan struct{})}
}

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.out.Write(p)
	if strings.Contains(string(p), w.match) {
		w.once.Do(func() { close(w.matched) })
	}
	return len(p), nil
}

func (w *logWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.String()
}

func noEnv(string) string { return "" }

// withLogin returns dbURL connecting as user with password. The test
// cluster trusts every connection, so the password is never checked, only
// carried where a log line could leak it.
func withLogin(t *testing.T, dbURL, user, password string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	q := u.Query()
	q.Set("user", user)
	q.Set("password", password)
	u.RawQuery = q.Encode()
	return u.String()
}

const retryLogged = "database not ready, retrying"

// TestRunWaitsForTheDatabase starts the server while PostgreSQL is down:
// start-up logs the failed attempt, keeps trying, and serves once the
// database is back.
func TestRunWaitsForTheDatabase(t *testing.T) {
	cluster := pgtest.Server(t) // not parallel: it stops the shared server
	db := pgtest.New(t)
	// Over TCP a stopped server refuses the connection, as in production.
	dbURL := withLogin(t, cluster.TCP(t, db.URL), "postgres", "hunter2")
	cluster.Stop(t)

	stderr := newLogWatch(retryLogged)
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-secret", secret, "-database-url", dbURL, "-db-wait", "1m"},
			noEnv, stderr, ready)
	}()
	select {
	case <-stderr.matched:
	case addr := <-ready:
		t.Fatalf("listening on %s while the database is down", addr)
	case err := <-done:
		t.Fatalf("run returned while the database is down: %v\n%s", err, stderr)
	}
	cluster.Start(t)
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("run returned after the database came back: %v\n%s", err, stderr)
	}
	c := client{t: t, url: "http://" + addr}
	status, body := c.deliver(invoiceEvent(t, "invoice.paid", "evt_wait_1", "acct_wait"))
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, `{"outcome":"processed"}`, body)
	cancel()
	require.NoError(t, <-done)

	log := stderr.String()
	require.Contains(t, log, "attempt=1 ")
	require.Contains(t, log, "connection refused")
	require.Contains(t, log, "retry_in=")
	require.NotContains(t, log, "hunter2")
}

// TestRunGivesUpOnTheDatabase: with PostgreSQL down for longer than
// -db-wait, run retries within it and then fails with one message. It
// gives up at -db-wait: well before three times it, however loaded the
// machine (the refused connections are answered at once), and long
// before the default minute.
func TestRunGivesUpOnTheDatabase(t *testing.T) {
	cluster := pgtest.Server(t) // not parallel: it stops the shared server
	dbURL := withLogin(t, cluster.TCP(t, cluster.URL()), "postgres", "hunter2")
	cluster.Stop(t)

	stderr := newLogWatch(retryLogged)
	// Long enough for a first attempt and a retry on a busy machine: with
	// 500 ms the deadline could cut the first attempt, and no retry came.
	// The error names the -db-wait it gave up after, not the default.
	const dbWait = 10 * time.Second
	start := time.Now()
	err := run(t.Context(), []string{"-addr", "127.0.0.1:0", "-secret", secret, "-database-url", dbURL, "-db-wait", dbWait.String()},
		noEnv, stderr, nil)
	elapsed := time.Since(start)
	require.ErrorContains(t, err, "giving up (-db-wait 10s)")
	require.Less(t, elapsed, 3*dbWait, "gave up at -db-wait")
	require.Regexp(t, `still unavailable after ([2-9]|[1-9][0-9]+) attempt\(s\)`, err.Error(), "retried within -db-wait")
	require.ErrorContains(t, err, "connection refused")
	require.NotContains(t, err.Error(), "hunter2")
	require.Contains(t, stderr.String(), retryLogged)
	require.NotContains(t, stderr.String(), "hunter2")
}

// TestRunStartupErrors: what waiting cannot fix fails at the first attempt;
// a missing database is waited for (see transientStartupError).
func TestRunStartupErrors(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	missingDB, err := url.Parse(withLogin(t, db.URL, "postgres", "hunter2"))
	require.NoError(t, err)
	missingDB.Path = "/no_such_database"

	for _, tc := range []struct {
		name    string
		dbURL   string
		wantErr []string
		retried bool
	}{
		{
			name:    "malformed URL",
			dbURL:   "host=localhost user=app password = hunter2 port=notaport",
			wantErr: []string{"not a PostgreSQL connection string", "invalid port"},
		},
		{
			name:    "unknown role",
			dbURL:   withLogin(t, db.URL, "no_such_role", "hunter2"),
			wantErr: []string{"SQLSTATE 28000", "not retried"},
		},
		{
			name:    "missing database",
			dbURL:   missingDB.String(),
			wantErr: []string{"SQLSTATE 3D000", "giving up"},
			retried: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stderr := newLogWatch(retryLogged)
			// Long enough for a first attempt and a retry on a busy
			// machine: with 300 ms it sometimes ended at the deadline
			// before the server answered 3D000 or 28000. What is not
			// retried fails at the first answer, so the wait costs it
			// nothing; the missing database waits it out.
			err := run(t.Context(), []string{"-addr", "127.0.0.1:0", "-secret", secret, "-database-url", tc.dbURL, "-db-wait", "10s"},
				noEnv, stderr, nil)
			require.Error(t, err)
			for _, want := range tc.wantErr {
				require.ErrorContains(t, err, want)
			}
			require.NotContains(t, err.Error(), "hunter2")
			require.NotContains(t, stderr.String(), "hunter2")
			if tc.retried {
				require.Contains(t, stderr.String(), retryLogged)
			} else {
				require.NotContains(t, stderr.String(), retryLogged)
			}
		})
	}
}

func TestRunRejectsNonPositiveDBWait(t *testing.T) {
	t.Parallel()
	err := runRefused(t, []string{"-secret", secret, "-db-wait", "0s"}, noEnv, io.Discard)
	require.ErrorContains(t, err, "-db-wait must be positive")
}

// A stray argument is refused: the flag package stops at it, and every
// flag after it would be ignored ("-inbox true" ran synchronously on the
// default address).
func TestRunRefusesStrayArguments(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // should it serve after all
	defer cancel()
	ready := make(chan string, 1)
	err := run(ctx, []string{"-secret", secret, "-inbox", "true", "-addr", "127.0.0.1:0"}, noEnv, io.Discard, ready)
	require.ErrorContains(t, err, `unexpected argument "true"`)
	require.Empty(t, ready, "nothing served")
}

// An address in use fails run at once, before any worker starts: it used
// to wait for its workers, which nothing stopped, for ever.
func TestRunReturnsWhenTheAddressIsTaken(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	done := make(chan error, 1)
	go func() {
		done <- run(t.Context(), []string{"-secret", secret, "-addr", taken.Addr().String()}, noEnv, io.Discard, nil)
	}()
	select {
	case err := <-done:
		require.ErrorContains(t, err, "address already in use")
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return")
	}
}

// A delivery in flight when the server is stopped is answered, and run
// returns only then, before the store closes: Serve returns as the
// shutdown begins, and run used to return with it.
func TestRunAnswersTheDeliveryInFlightAtTheStop(t *testing.T) {
	t.Parallel()
	ctx, stop := context.WithCancel(t.Context())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-secret", secret, "-addr", "127.0.0.1:0"}, noEnv, io.Discard, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("run returned early: %v", err)
	}

	payload := invoiceEvent(t, "invoice.paid", "evt_in_flight", "acct_in_flight")
	body, rest := io.Pipe()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/webhook", body)
	require.NoError(t, err)
	req.ContentLength = int64(len(payload))
	req.Header.Set("Stripe-Signature", idempotencytest.SignatureHeader(payload, secret, time.Now()))
	// The body is sent only once the server asks for it (100 Continue),
	// which it does as the handler first reads it: when the write below
	// returns, the handler runs.
	req.Header.Set("Expect", "100-continue")
	hc := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
	answered := make(chan string, 1)
	go func() {
		resp, err := hc.Do(req)
		if err != nil {
			answered <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answered <- fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}()
	half := len(payload) / 2
	_, err = rest.Write(payload[:half]) // the delivery is in flight
	require.NoError(t, err)

	stop()
	require.Eventually(t, func() bool { // the shutdown began: the listener is closed
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
		}
		return err != nil
	}, 10*time.Second, 5*time.Millisecond)
	require.Never(t, func() bool { return len(done) > 0 }, 300*time.Millisecond, 5*time.Millisecond,
		"run returned with a delivery in flight")

	_, err = rest.Write(payload[half:])
	require.NoError(t, err)
	require.NoError(t, rest.Close())
	require.Equal(t, `200 {"outcome":"processed"}`, <-answered)
	require.NoError(t, <-done)
}

func TestTransientStartupError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "57P03"}, true},  // the database system is starting up
		{&pgconn.PgError{Code: "57P01"}, true},  // admin shutdown mid-migration
		{&pgconn.PgError{Code: "08006"}, true},  // connection failure
		{&pgconn.PgError{Code: "53300"}, true},  // too many connections
		{&pgconn.PgError{Code: "3D000"}, true},  // database does not exist (yet)
		{&pgconn.PgError{Code: "28P01"}, false}, // wrong password
		{&pgconn.PgError{Code: "28000"}, false}, // unknown role, no pg_hba.conf entry
		{&pgconn.PgError{Code: "42501"}, false}, // no privilege to migrate
		{fmt.Errorf("migration 001_init: %w", &pgconn.PgError{Code: "42601"}), false},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{errors.New("idempotency: PgxConfig.Schema is invalid"), false},
	} {
		require.Equal(t, tc.want, transientStartupError(tc.err), "%v", tc.err)
	}
}
