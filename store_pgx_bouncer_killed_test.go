package idempotency_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// The event that the worker processes of TestPgxBouncerKilled hang in.
const (
	bouncerKilledEvent   = "evt_bnc_killed"
	bouncerKilledInvoice = "in_bnc_killed"
	bouncerKilledAccount = "acct_bnc_killed"
)

// TestPgxBouncerKilled is TestPgxInboxFaultWorkerKilled behind PgBouncer
// in transaction pooling mode: a process connected through PgBouncer is
// killed with SIGKILL while its handler is inside the event's transaction,
// after its writes. PgBouncer ends the dead client's server transaction
// (no session of the test's pool is left in one), the event is applied
// exactly once by the test's process, through the same PgBouncer, and the
// 20 events after it are served as before, with no prepared statement
// mixed up and no error.
//
// inbox: the killed process runs workers (PollOnly, the default lease of
// a minute); once its lease has expired (the test's inbox clock past it),
// the test's workers apply the event as attempt 2:
// the dead attempt counts, and attempt 2 reports it as it starts. sync: the killed process serves the delivery
// with a synchronous Handler; Stripe's retry is then processed, and a copy
// after it is a duplicate.
func TestPgxBouncerKilled(t *testing.T) {
	t.Parallel()
	t.Run("inbox", func(t *testing.T) {
		t.Parallel()
		a := newBouncerApp(t, 1, idempotency.PgxConfig{})
		clock := idempotencytest.NewClock(time.Now())
		cfg := idempotency.InboxConfig{PollOnly: true, Lease: 12 * time.Second, Timeout: 10 * time.Second, PollInterval: 100 * time.Millisecond, Logger: a.logger,
			Now: clock.Now}
		var attempts []idempotency.Result // of the killed event, every process of the test's
		observeResults(&cfg, func(res idempotency.Result) {
			a.record(res)
			if res.EventID == bouncerKilledEvent {
				a.mu.Lock()
				attempts = append(attempts, res)
				a.mu.Unlock()
			}
		})
		in, err := idempotency.NewInbox(a.stores[0], a.hs, cfg)
		require.NoError(t, err)
		h, err := in.Handler(a.config())
		require.NoError(t, err)
		payload := invoicePayload(t, bouncerKilledEvent, bouncerKilledInvoice, bouncerKilledAccount)
		require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, payload, testSecret).Outcome)

		w := startHelperProcess(t, "TestHelperBouncerInboxWorker", helperWorkerEntered, a.db.URL, a.db.Schema)
		w.await(t, "its handler")
		r, ok, err := in.Lookup(t.Context(), bouncerKilledEvent)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, idempotency.InboxProcessing, r.State)
		require.Equal(t, 1, r.Attempt)
		killInTransaction(t, pgtest.AdminPool(t), a.db.Schema, w)

		clock.Advance(pastHelperLease)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- in.Run(ctx) }()
		stop := func() {
			cancel()
			assert.NoError(t, recv(t, done, "Run stopped"))
		}
		defer stop()
		awaitProcessed := func(n int) {
			t.Helper()
			faultAwait(t, 30*time.Second, fmt.Sprintf("%d events processed", n), func() bool {
				st, err := in.Stats(t.Context())
				return err == nil && st.Counts[idempotency.InboxProcessed] == n
			})
		}
		awaitProcessed(1)
		after := bouncerKilledAfter(t)
		require.Equal(t, len(after), deliverAll(h, after, 4).Count(idempotency.OutcomeQueued))
		awaitProcessed(1 + len(after))

		r, _, err = in.Lookup(t.Context(), bouncerKilledEvent)
		require.NoError(t, err)
		require.Equal(t, 2, r.Attempt, "the killed worker's attempt counts")
		a.mu.Lock()
		require.Len(t, attempts, 2, "the killed attempt, reported by the test's, and the test's")
		require.Equal(t, 1, attempts[0].Attempt)
		require.Equal(t, idempotency.InboxFailed, attempts[0].State)
		require.ErrorIs(t, attempts[0].Err, idempotency.ErrLeaseExpired)
		require.Equal(t, idempotency.OutcomeProcessed, attempts[1].Outcome)
		require.Equal(t, 2, attempts[1].Attempt)
		require.Equal(t, 1, a.runs[bouncerKilledEvent], "the test's process ran the handler once")
		a.mu.Unlock()
		requireBouncerKilledOnce(t, a, len(after))
	})
	t.Run("sync", func(t *testing.T) {
		t.Parallel()
		a := newBouncerApp(t, 1, idempotency.PgxConfig{})
		h, err := idempotency.NewHandler(a.stores[0], a.hs, a.config())
		require.NoError(t, err)

		w := startHelperProcess(t, "TestHelperBouncerHandler", helperWorkerEntered, a.db.URL, a.db.Schema)
		w.await(t, "its handler")
		killInTransaction(t, pgtest.AdminPool(t), a.db.Schema, w)

		payload := invoicePayload(t, bouncerKilledEvent, bouncerKilledInvoice, bouncerKilledAccount)
		ans := idempotencytest.Deliver(h, payload, testSecret)
		require.Equal(t, idempotency.OutcomeProcessed, ans.Outcome, "Stripe's retry: %s", ans.Body)
		ans = idempotencytest.Deliver(h, payload, testSecret)
		require.Equal(t, idempotency.OutcomeDuplicate, ans.Outcome, ans.Body)
		after := bouncerKilledAfter(t)
		require.Equal(t, len(after), deliverAll(h, after, 4).Count(idempotency.OutcomeProcessed))
		a.mu.Lock()
		require.Equal(t, 1, a.runs[bouncerKilledEvent], "the test's process ran the handler once")
		a.mu.Unlock()
		requireBouncerKilledOnce(t, a, len(after))
	})
}

// bouncerKilledAfter are the payloads of the 20 events TestPgxBouncerKilled
// sends after the killed one, of account acct_bnc_killed_after.
func bouncerKilledAfter(t *testing.T) [][]byte {
	after := make([][]byte, 20)
	for i := range after {
		after[i] = invoicePayload(t, fmt.Sprintf("evt_bnc_killed_after_%d", i), fmt.Sprintf("in_bnc_killed_after_%d", i), "acct_bnc_killed_after")
	}
	return after
}

// killInTransaction kills w, whose handler hangs inside its transaction
// on a session of application name appName (the schema's, through
// PgBouncer a server session of the test's pool), and waits until no
// session of appName is in a transaction: the killed process's ended with
// its client, and rolled back.
func killInTransaction(t *testing.T, admin *pgxpool.Pool, appName string, w *helperWorker) {
	t.Helper()
	require.Positive(t, transactionsOf(t, admin, appName), "the handler's transaction on a session of %s", appName)
	w.kill(t)
	awaitNoTransaction(t, admin, appName)
}

// transactionsOf counts the sessions of application name appName in a
// transaction, asking admin (a pgtest.AdminPool).
func transactionsOf(t *testing.T, admin *pgxpool.Pool, appName string) int {
	t.Helper()
	var n int
	require.NoError(t, admin.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
WHERE application_name = $1 AND xact_start IS NOT NULL`, appName).Scan(&n))
	return n
}

// awaitNoTransaction waits until no session of application name appName is
// in a transaction.
func awaitNoTransaction(t *testing.T, admin *pgxpool.Pool, appName string) {
	t.Helper()
	faultAwait(t, 10*time.Second, "no transaction of "+appName+" left", func() bool { return transactionsOf(t, admin, appName) == 0 })
}

// requireBouncerKilledOnce requires the killed event and the after events
// after it applied exactly once, with no error (but the report of the
// killed attempt, in inbox mode) and no prepared statement mixed up.
func requireBouncerKilledOnce(t *testing.T, a *bouncerApp, after int) {
	t.Helper()
	require.Equal(t, 100, a.credits(t, bouncerKilledAccount), "the killed process's credit rolled back, the test's committed")
	require.Equal(t, 100*after, a.credits(t, "acct_bnc_killed_after"))
	require.Equal(t, 1+after, a.ledgerSize(t))
	var guards int
	require.NoError(t, a.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM `+
		pgx.Identifier{a.db.Schema, "idempotency_guards"}.Sanitize()+` WHERE key = $1`, bouncerKilledInvoice).Scan(&guards))
	require.Equal(t, 1, guards)
	a.requireCleanBut(t, bouncerKilledEvent)
}

// bouncerHelperHandlers are, in a process that TestPgxBouncerKilled starts, the
// service's handlers on the parent's schema, hanging inside the
// transaction of the event's first run after its writes, until the
// process is killed.
func bouncerHelperHandlers() *idempotency.Handlers {
	a := &bouncerApp{accounts: pgx.Identifier{os.Getenv(envHelperWorkerSchema), "accounts"}.Sanitize(), runs: map[string]int{}}
	return a.handlers(func() {
		fmt.Println(helperWorkerEntered)
		select {} // until SIGKILL, whatever the attempt's timeout
	})
}

// TestHelperBouncerInboxWorker is not a test: it is the worker process,
// connected through PgBouncer, that TestPgxBouncerKilled/inbox starts and
// kills. Its lease and Timeout are the defaults, as TestHelperInboxWorker's.
func TestHelperBouncerInboxWorker(t *testing.T) {
	_, store := helperWorkerStore(t, "TestPgxBouncerKilled")
	hs := bouncerHelperHandlers()
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
		PollOnly: true, PollInterval: 100 * time.Millisecond, Logger: discardLogger(),
	})
	require.NoError(t, err)
	require.NoError(t, in.Run(context.Background()))
}

// TestHelperBouncerHandler is not a test: it is the process, connected
// through PgBouncer, that TestPgxBouncerKilled/sync starts and kills while
// its synchronous Handler serves the event's delivery.
func TestHelperBouncerHandler(t *testing.T) {
	_, store := helperWorkerStore(t, "TestPgxBouncerKilled")
	hs := bouncerHelperHandlers()
	h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	ans := idempotencytest.Deliver(h, invoicePayload(t, bouncerKilledEvent, bouncerKilledInvoice, bouncerKilledAccount), testSecret)
	t.Fatalf("the delivery returned: %d %s", ans.Status, ans.Body)
}
