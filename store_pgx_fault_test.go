package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// pgWebhook is the seed scenario's service on PostgreSQL: invoice.paid
// credits the account 100, once per invoice, in the claim's transaction.
// hook, when set, runs after the credit and before the commit.
type pgWebhook struct {
	db      *pgtest.DB
	pool    *pgxpool.Pool // the store's pool: db.Pool, or a plain one
	store   *idempotency.PgxStore
	hs      *idempotency.Handlers // the handler's, for another Handler on store
	handler *idempotency.Handler
	hook    func(ctx context.Context, tx idempotency.Tx) error
}

func newPgWebhook(t *testing.T, cfg idempotency.Config) *pgWebhook {
	t.Helper()
	db := newPgDB(t)
	return newPgWebhookOn(t, db, db.Pool, cfg)
}

// newPgWebhookOn builds the service with its store on pool.
func newPgWebhookOn(t *testing.T, db *pgtest.DB, pool *pgxpool.Pool, cfg idempotency.Config) *pgWebhook {
	t.Helper()
	w := &pgWebhook{db: db, pool: pool}
	ctx := t.Context()
	var err error
	w.store, err = idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: w.db.Schema})
	require.NoError(t, err)
	require.NoError(t, w.store.Migrate(ctx))
	_, err = w.db.Pool.Exec(ctx, `CREATE TABLE accounts (id text PRIMARY KEY, credits bigint NOT NULL DEFAULT 0)`)
	require.NoError(t, err)

	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID)
		if err != nil || !first {
			return err
		}
		_, err = idempotency.PgxTx(tx).Exec(ctx, `INSERT INTO accounts (id, credits) VALUES ($1, 100)
ON CONFLICT (id) DO UPDATE SET credits = accounts.credits + 100`, ev.Object.Metadata["account_id"])
		if err != nil {
			return err
		}
		if w.hook != nil {
			return w.hook(ctx, tx)
		}
		return nil
	})
	cfg.Secrets = []string{testSecret}
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	w.hs = hs
	w.handler, err = idempotency.NewHandler(w.store, hs, cfg)
	require.NoError(t, err)
	return w
}

func (w *pgWebhook) credits(t *testing.T, account string) int {
	t.Helper()
	var n int
	err := w.db.Pool.QueryRow(context.Background(), `SELECT coalesce(sum(credits), 0) FROM accounts WHERE id = $1`, account).Scan(&n)
	require.NoError(t, err)
	return n
}

func (w *pgWebhook) ledger(t *testing.T, eventID string) bool {
	t.Helper()
	_, ok, err := w.store.LookupEvent(context.Background(), eventID)
	require.NoError(t, err)
	return ok
}

// TestPgxSeedScenario is the story the library exists for, through the real
// HTTP handler on PostgreSQL.
func TestPgxSeedScenario(t *testing.T) {
	t.Parallel()
	w := newPgWebhook(t, idempotency.Config{})
	first := invoicePayload(t, "evt_seed_1", "in_seed_1", "acct_seed")

	// The first delivery fails after its write.
	w.hook = func(context.Context, idempotency.Tx) error { return errors.New("receipt service down") }
	a := idempotencytest.Deliver(w.handler, first, testSecret)
	require.Equal(t, 500, a.Status)
	require.Equal(t, 0, w.credits(t, "acct_seed"))
	require.False(t, w.ledger(t, "evt_seed_1"))
	w.hook = nil

	// Stripe's retry.
	a = idempotencytest.Deliver(w.handler, first, testSecret)
	require.Equal(t, idempotency.OutcomeProcessed, a.Outcome)
	require.Equal(t, 100, w.credits(t, "acct_seed"))

	// 10 concurrent copies of a new event.
	answers := idempotencytest.Replay(w.handler, invoicePayload(t, "evt_seed_2", "in_seed_2", "acct_seed"), testSecret, 10)
	require.Equal(t, 1, answers.Count(idempotency.OutcomeProcessed))
	require.Equal(t, 9, answers.Count(idempotency.OutcomeDuplicate))
	require.Equal(t, 200, w.credits(t, "acct_seed"))

	// A second event id for an invoice already paid.
	a = idempotencytest.Deliver(w.handler, invoicePayload(t, "evt_seed_3", "in_seed_2", "acct_seed"), testSecret)
	require.Equal(t, idempotency.OutcomeProcessed, a.Outcome)
	require.Equal(t, 200, w.credits(t, "acct_seed"))
}

// gate holds handlers after their write until released, and counts them in.
type gate struct {
	entered chan struct{}
	release chan struct{}
}

func newGate(n int) *gate {
	return &gate{entered: make(chan struct{}, n), release: make(chan struct{})}
}

func (g *gate) hook(ctx context.Context, _ idempotency.Tx) error {
	g.entered <- struct{}{}
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) waitEntered(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-g.entered:
		case <-time.After(30 * time.Second):
			t.Fatal("handlers did not reach the gate")
		}
	}
}

// TestPgxDatabaseStoppedInFlight stops PostgreSQL while deliveries hold open
// transactions and while more arrive, starts it again, and redelivers what
// failed: the totals are exact and the process never restarted.
func TestPgxDatabaseStoppedInFlight(t *testing.T) {
	cluster := pgtest.Server(t) // not parallel: it stops the shared server
	// A pool as users make it, over TCP: its connections are not checked
	// after the restart, the store copes with the stale ones.
	db := newPgDB(t)
	poolCfg, err := pgxpool.ParseConfig(cluster.TCP(t, db.URL))
	require.NoError(t, err)
	poolCfg.MaxConns = 16
	pool, err := pgxpool.NewWithConfig(t.Context(), poolCfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	// The deliveries after the restart, on stale connections and a server
	// just started, must not fail for Timeout: 30 s. The deliveries held
	// in flight end with the server, not with Timeout.
	w := newPgWebhookOn(t, db, pool, idempotency.Config{Timeout: 30 * time.Second})
	// Fill the pool with idle connections, which the stop will leave stale.
	conns := make([]*pgxpool.Conn, poolCfg.MaxConns)
	for i := range conns {
		conns[i], err = pool.Acquire(t.Context())
		require.NoError(t, err)
	}
	for _, c := range conns {
		c.Release()
	}
	const inFlight, during = 4, 4
	g := newGate(inFlight)
	w.hook = g.hook

	payloads := make([][]byte, inFlight+during)
	for i := range payloads {
		// The later events are twins of the in-flight ones (another event id,
		// the same invoice), so the guards are in play too.
		payloads[i] = invoicePayload(t, fmt.Sprintf("evt_stop_%d", i), fmt.Sprintf("in_stop_%d", i%inFlight), fmt.Sprintf("acct_stop_%d", i%inFlight))
	}
	answers := make([]idempotencytest.Answer, len(payloads))
	var wg sync.WaitGroup
	for i := range inFlight {
		wg.Go(func() { answers[i] = idempotencytest.Deliver(w.handler, payloads[i], testSecret) })
	}
	g.waitEntered(t, inFlight)

	cluster.Stop(t)
	close(g.release)
	wg.Wait()
	w.hook = nil
	for i := inFlight; i < len(payloads); i++ {
		answers[i] = idempotencytest.Deliver(w.handler, payloads[i], testSecret)
		require.Equal(t, 503, answers[i].Status, "a delivery while the database is down")
	}
	health := w.store.Ping(t.Context())
	require.ErrorIs(t, health, idempotency.ErrStoreUnavailable)
	for i, a := range answers[:inFlight] {
		if a.Status == 200 {
			// Remembered in the process: still a duplicate, database or not.
			a = idempotencytest.Deliver(w.handler, payloads[i], testSecret)
			require.Equal(t, idempotency.OutcomeDuplicate, a.Outcome, "redelivery %d while the database is down", i)
		}
	}
	cluster.Start(t)
	for i := inFlight; i < len(payloads); i++ {
		// The first deliveries after the restart meet the pool's stale
		// connections; none may fail for them.
		a := idempotencytest.Deliver(w.handler, payloads[i], testSecret)
		require.Equal(t, 200, a.Status, "delivery %d after the restart: %s", i, a.Body)
		answers[i] = a
	}
	require.NoError(t, w.store.Ping(t.Context()), "the store recovers without a restart")

	for i, a := range answers {
		if a.Status == 200 {
			require.True(t, w.ledger(t, fmt.Sprintf("evt_stop_%d", i)), "a 2xx whose claim is not committed")
			continue
		}
		require.GreaterOrEqual(t, a.Status, 500, "answer %d: %+v", i, a)
		require.False(t, w.ledger(t, fmt.Sprintf("evt_stop_%d", i)), "a 5xx whose claim committed")
	}
	// Stripe redelivers every non-2xx.
	for i, a := range answers {
		if a.Status != 200 {
			a = idempotencytest.Deliver(w.handler, payloads[i], testSecret)
			require.Equal(t, 200, a.Status, "redelivery %d: %s", i, a.Body)
		}
	}
	for i := range inFlight {
		require.Equal(t, 100, w.credits(t, fmt.Sprintf("acct_stop_%d", i)), "one credit per invoice")
	}
}

// holdSession sends the pid of tx's session on pids, then waits for
// release: a transaction held open for the test to end from outside
// (pg_terminate_backend).
func holdSession(ctx context.Context, tx idempotency.Tx, pids chan<- int32, release <-chan struct{}) error {
	var pid int32
	if err := idempotency.PgxTx(tx).QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		return err
	}
	pids <- pid
	<-release
	return nil
}

// TestPgxBackendTerminated kills the backend of an in-flight transaction.
func TestPgxBackendTerminated(t *testing.T) {
	t.Parallel()
	w := newPgWebhook(t, idempotency.Config{})
	pids := make(chan int32, 1)
	release := make(chan struct{})
	w.hook = func(ctx context.Context, tx idempotency.Tx) error { return holdSession(ctx, tx, pids, release) }
	payload := invoicePayload(t, "evt_kill", "in_kill", "acct_kill")
	done := make(chan idempotencytest.Answer, 1)
	go func() { done <- idempotencytest.Deliver(w.handler, payload, testSecret) }()
	pid := <-pids
	var terminated bool
	require.NoError(t, pgtest.AdminPool(t).QueryRow(t.Context(), `SELECT pg_terminate_backend($1)`, pid).Scan(&terminated))
	require.True(t, terminated)
	close(release)
	a := <-done
	require.GreaterOrEqual(t, a.Status, 500, a.Body)
	require.Equal(t, 0, w.credits(t, "acct_kill"))
	require.False(t, w.ledger(t, "evt_kill"))

	w.hook = nil
	a = idempotencytest.Deliver(w.handler, payload, testSecret)
	require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
	require.Equal(t, 100, w.credits(t, "acct_kill"))
}

// TestPgxSenderHangsUp cancels the request's context while the handler is
// inside the transaction: the transaction commits whole.
func TestPgxSenderHangsUp(t *testing.T) {
	t.Parallel()
	w := newPgWebhook(t, idempotency.Config{})
	g := newGate(1)
	w.hook = g.hook
	ctx, cancel := context.WithCancel(t.Context())
	req := idempotencytest.NewSignedRequest("/", invoicePayload(t, "evt_hangup", "in_hangup", "acct_hangup"), testSecret).WithContext(ctx)
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() { w.handler.ServeHTTP(rec, req); close(done) }()
	g.waitEntered(t, 1)
	cancel()
	close(g.release)
	<-done
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Equal(t, 100, w.credits(t, "acct_hangup"))
	require.True(t, w.ledger(t, "evt_hangup"))
}

// TestPgxLockTimeout blocks the handler on a row lock past Config.Timeout.
func TestPgxLockTimeout(t *testing.T) {
	t.Parallel()
	w := newPgWebhook(t, idempotency.Config{Timeout: 300 * time.Millisecond})
	ctx := t.Context()
	_, err := w.db.Pool.Exec(ctx, `INSERT INTO accounts (id, credits) VALUES ('acct_locked', 0)`)
	require.NoError(t, err)
	locker, err := w.db.Pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = locker.Rollback(context.Background()) })
	_, err = locker.Exec(ctx, `SELECT 1 FROM accounts WHERE id = 'acct_locked' FOR UPDATE`)
	require.NoError(t, err)

	payload := invoicePayload(t, "evt_locked", "in_locked", "acct_locked")
	a := idempotencytest.Deliver(w.handler, payload, testSecret)
	require.Equal(t, 500, a.Status, a.Body)
	// pgx closes a connection whose query was cancelled and the pool frees
	// its slot in the background: only the locker's stays checked out.
	// The close waits up to 15 s for the server: a backend that had not
	// yet read the blocked statement when the cancel came (a loaded
	// machine) ignores it, then waits for the lock.
	require.Eventually(t, func() bool { return w.db.Pool.Stat().AcquiredConns() == 1 }, 30*time.Second, 5*time.Millisecond,
		"the timed-out transaction's connection went back to the pool")
	require.NoError(t, locker.Rollback(ctx))
	require.False(t, w.ledger(t, "evt_locked"))

	// Stripe's retry, to a handler with the default Timeout: the whole
	// transaction of a delivery can take longer than 300 ms on a loaded
	// machine.
	retry, err := idempotency.NewHandler(w.store, w.hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	a = idempotencytest.Deliver(retry, payload, testSecret)
	require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
	require.Equal(t, 100, w.credits(t, "acct_locked"))
}

func TestPgxMigrate(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	schema := db.Schema + `_"odd 'name`
	t.Cleanup(func() {
		_, _ = db.Pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+quoteIdent(schema)+` CASCADE`)
	})
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: schema})
	require.NoError(t, err)
	// Several replicas migrate at once, then again.
	migrateAtOnce(t, db, store, schema, 6)
	require.NoError(t, store.Migrate(t.Context()))
	out, err := store.Run(t.Context(), idempotency.Claim{EventID: "evt_m", EventType: "invoice.paid"}, func(ctx context.Context, tx idempotency.Tx) error {
		order, err := idempotency.CheckOrder(ctx, tx, "customer", "cus_m", time.Unix(1756742400, 0))
		require.Equal(t, idempotency.OrderNewer, order)
		return err
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	// OnCurrent's lock and counter, and the inbox's, on that schema.
	hs := idempotency.NewHandlers()
	idempotency.OnCurrent(hs, []string{"customer.subscription.updated"}, func(ctx context.Context, id, account string) (string, error) {
		return id, nil
	}, func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[string]) error { return nil })
	inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{PollOnly: true})
	require.NoError(t, err)
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, []byte(`{"id":"evt_m_sub","object":"event","type":"customer.subscription.updated","created":1756742400,"data":{"object":{"id":"sub_m","object":"subscription"}}}`), testSecret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	n, err := inbox.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	rec, _, err := inbox.Lookup(t.Context(), "evt_m_sub")
	require.NoError(t, err)
	require.Equal(t, idempotency.InboxProcessed, rec.State, rec.LastError)

	_, err = idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{IsoLevel: "read sometimes"})
	require.ErrorContains(t, err, "IsoLevel")
	_, err = idempotency.NewPgxStore(nil, idempotency.PgxConfig{})
	require.Error(t, err)
}

// TestPgxMigrateConcurrentAtAnyDefaultIsolation: replicas migrating at
// once succeed when the server's default isolation is repeatable read or
// serializable, a new schema or an existing empty one. The replica that
// waited for the lock read a snapshot taken before the first committed:
// "schema already exists", or every migration applied again.
func TestPgxMigrateConcurrentAtAnyDefaultIsolation(t *testing.T) {
	t.Parallel()
	for _, iso := range []string{"repeatable read", "serializable"} {
		t.Run(iso, func(t *testing.T) {
			t.Parallel()
			db := pgtest.NewWithConfig(t, func(c *pgxpool.Config) {
				c.ConnConfig.RuntimeParams["default_transaction_isolation"] = iso
			})
			fresh := db.Schema + "_new"
			t.Cleanup(func() {
				_, _ = db.Pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+quoteIdent(fresh)+` CASCADE`)
			})
			for _, schema := range []string{fresh, db.Schema} {
				store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: schema})
				require.NoError(t, err)
				migrateAtOnce(t, db, store, schema, 4)
			}
		})
	}
}

// migrateAtOnce runs n Migrates of store at once, as replicas starting
// together do, and checks that each embedded migration was applied once.
func migrateAtOnce(t *testing.T, db *pgtest.DB, store *idempotency.PgxStore, schema string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() { errs <- store.Migrate(t.Context()) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, schema)
	}
	var versions int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM `+quoteIdent(schema)+`.idempotency_migrations`).Scan(&versions))
	files, err := filepath.Glob("migrations/*.up.sql")
	require.NoError(t, err)
	require.Equal(t, len(files), versions, "each embedded migration applied once")
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// appRole creates a login role named db's schema and suffix, which may
// read, insert and update the rows of the schema's tables (created so
// far), and is granted the roles in also; it is dropped when the test
// ends. It returns the role's name.
func appRole(t *testing.T, admin *pgxpool.Pool, db *pgtest.DB, suffix string, also ...string) string {
	t.Helper()
	role := db.Schema + suffix
	schema, r := quoteIdent(db.Schema), quoteIdent(role)
	qs := []string{
		`CREATE ROLE ` + r + ` LOGIN`,
		`GRANT USAGE ON SCHEMA ` + schema + ` TO ` + r,
		`GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA ` + schema + ` TO ` + r,
	}
	for _, granted := range also {
		qs = append(qs, `GRANT `+quoteIdent(granted)+` TO `+r)
	}
	for _, q := range qs {
		_, err := admin.Exec(t.Context(), q)
		require.NoError(t, err, q)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = admin.Exec(ctx, `REVOKE ALL ON ALL TABLES IN SCHEMA `+schema+` FROM `+r)
		_, _ = admin.Exec(ctx, `REVOKE ALL ON SCHEMA `+schema+` FROM `+r)
		_, _ = admin.Exec(ctx, `DROP ROLE IF EXISTS `+r)
	})
	return role
}

// storeAs returns a PgxStore of schema on a pool of its own whose
// connections log in as role; the pool is closed when the test ends.
func storeAs(t *testing.T, db *pgtest.DB, role, schema string) *idempotency.PgxStore {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(db.URL)
	require.NoError(t, err)
	cfg.ConnConfig.User = role
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: schema})
	require.NoError(t, err)
	return store
}

// TestPgxMigrateLeastPrivilege: once the tables exist, a role that may only
// use the schema and write its rows migrates (a no-op) and runs events.
func TestPgxMigrateLeastPrivilege(t *testing.T) {
	t.Parallel()
	db := newPgDB(t)
	owner, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, owner.Migrate(t.Context()))

	app := storeAs(t, db, appRole(t, pgtest.AdminPool(t), db, "_app"), db.Schema)
	require.NoError(t, app.Migrate(t.Context()), "nothing to create, nothing to refuse")
	out, err := app.Run(t.Context(), idempotency.Claim{EventID: "evt_app", EventType: "invoice.paid"},
		func(ctx context.Context, tx idempotency.Tx) error {
			_, err := tx.Guard(ctx, "invoice", "in_app")
			return err
		})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
}
