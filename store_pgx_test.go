package idempotency_test

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// pgBackend is a PgxStore in a fresh schema, with a counters table written
// through PgxTx in the event's transaction.
type pgBackend struct {
	db    *pgtest.DB
	store *idempotency.PgxStore
}

func newPgBackend(t *testing.T, cfg idempotency.PgxConfig) *pgBackend {
	return newPgBackendOn(t, cfg, func(p *pgxpool.Pool) idempotency.PgxBeginner { return p })
}

// beginOnly hides every method of a pool but BeginTx, as a PgxBeginner
// of the user's own would: the store then begins, claims and savepoints in
// two round trips instead of one.
type beginOnly struct{ pool *pgxpool.Pool }

func (b beginOnly) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	return b.pool.BeginTx(ctx, opts)
}

// connlessBegin is a PgxBeginner of the user's own whose pgx.Tx has no
// *pgx.Conn to give (a wrapper that adds tracing, say).
type connlessBegin struct{ pool *pgxpool.Pool }

type connlessTx struct{ pgx.Tx }

func (connlessTx) Conn() *pgx.Conn { return nil }

func (b connlessBegin) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	tx, err := b.pool.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return connlessTx{tx}, nil
}

// A handler's error on a transaction whose pgx.Tx has no *pgx.Conn is
// translated as before the store asked the connection (an EOF reads as
// the database gone), and nothing panics; a plain error is a failure; a
// handler that returns nil is applied.
func TestPgxHandlerErrorWithoutAConn(t *testing.T) {
	t.Parallel()
	b := newPgBackendOn(t, idempotency.PgxConfig{}, func(p *pgxpool.Pool) idempotency.PgxBeginner { return connlessBegin{p} })
	out, err := b.store.Run(t.Context(), idempotency.Claim{EventID: "evt_connless_eof", EventType: "invoice.paid"},
		func(context.Context, idempotency.Tx) error { return io.ErrUnexpectedEOF })
	require.Equal(t, idempotency.OutcomeUnavailable, out)
	require.ErrorIs(t, err, idempotency.ErrStoreUnavailable)
	out, err = b.store.Run(t.Context(), idempotency.Claim{EventID: "evt_connless_fail", EventType: "invoice.paid"},
		func(context.Context, idempotency.Tx) error { return errors.New("no such plan") })
	require.Equal(t, idempotency.OutcomeFailed, out)
	require.EqualError(t, err, "no such plan")
	// A handler that returns nil commits: no connection to ask whether a
	// statement of its aborted the transaction, the store asks none.
	out, err = b.store.Run(t.Context(), idempotency.Claim{EventID: "evt_connless_ok", EventType: "invoice.paid"},
		func(ctx context.Context, tx idempotency.Tx) error { return b.add(ctx, tx, "connless_ok", 1) })
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	require.Equal(t, 1, b.get(t, "connless_ok"))
}

// newPgBackendOn is newPgBackend with the PgxBeginner db makes of the
// pool. The pool and a few of its sessions, reset, go on to the next test
// given the schema (pgtest.Template.NewPooled): a new session costs a
// PostgreSQL process, whose start and end cost more CPU than most of
// these tests do.
func newPgBackendOn(t *testing.T, cfg idempotency.PgxConfig, db func(*pgxpool.Pool) idempotency.PgxBeginner) *pgBackend {
	t.Helper()
	return newPgBackendIn(t, pgBackendSchemas.NewPooled(t, deliveryMaxConns), cfg, db)
}

// pgBackendSchemas are schemas a pgBackend's or a bouncerBackend's store
// is migrated in, with the counters table: a migration per test cost about a quarter of the
// CPU of the package's PostgreSQL tests. A test's schema is reset and
// given to a later test if the test left it as migrated (see
// pgtest.Template).
var pgBackendSchemas = pgtest.NewTemplate(func(ctx context.Context, db *pgtest.DB) error {
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	if err != nil {
		return err
	}
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	_, err = db.Pool.Exec(ctx, createCounters)
	return err
})

// createCounters creates the counters table of a pgBackend, if it is not
// there.
const createCounters = `CREATE TABLE IF NOT EXISTS counters (name text PRIMARY KEY, value bigint NOT NULL)`

// newPgBackendIn is newPgBackendOn in pdb's schema, which it migrates
// (at once, when a pgBackendSchemas schema) and creates the counters
// table in.
func newPgBackendIn(t *testing.T, pdb *pgtest.DB, cfg idempotency.PgxConfig, db func(*pgxpool.Pool) idempotency.PgxBeginner) *pgBackend {
	t.Helper()
	cfg.Schema = pdb.Schema
	store, err := idempotency.NewPgxStore(db(pdb.Pool), cfg)
	require.NoError(t, err)
	migratePgBackend(t, store, pdb.Pool)
	return &pgBackend{db: pdb, store: store}
}

// migratePgBackend migrates store's schema and creates the counters table
// of a pgBackend in it, through pool, where they are not there yet.
func migratePgBackend(t *testing.T, store *idempotency.PgxStore, pool *pgxpool.Pool) {
	t.Helper()
	require.NoError(t, store.Migrate(t.Context()))
	_, err := pool.Exec(t.Context(), createCounters)
	require.NoError(t, err)
}

func (b *pgBackend) add(ctx context.Context, tx idempotency.Tx, name string, delta int) error {
	_, err := idempotency.PgxTx(tx).Exec(ctx,
		`INSERT INTO counters (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = counters.value + EXCLUDED.value`,
		name, delta)
	return err
}

func (b *pgBackend) get(t testing.TB, name string) int {
	var v int
	err := b.db.Pool.QueryRow(context.Background(), `SELECT value FROM counters WHERE name = $1`, name).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0
	}
	require.NoError(t, err)
	return v
}

// waiting counts the runs blocked on another run of the same key: this
// schema's sessions waiting on a lock, and runs waiting in the process.
func (b *pgBackend) waiting(t testing.TB) int { return waitingRuns(t, b.db.Schema, b.store) }

// waitingRuns counts the runs of store blocked on another run of the same
// key: the sessions named after schema (application_name) waiting on a
// lock, and the runs waiting in the process.
func waitingRuns(t testing.TB, schema string, store *idempotency.PgxStore) int {
	n, err := pgtest.LockWaiters(t, schema)
	require.NoError(t, err)
	return n + idempotency.PgxLocalWaiting(store)
}

func (b *pgBackend) conformance() idempotencytest.StoreBackend {
	return idempotencytest.StoreBackend{Store: b.store, Add: b.add, Get: b.get, Waiting: b.waiting}
}

// TestPgxStoreConformance runs the suite at every isolation level, and with
// the in-process memory of recent claims turned off, so that PostgreSQL
// alone is shown to give the guarantees, as it does across replicas.
func TestPgxStoreConformance(t *testing.T) {
	t.Parallel()
	configs := map[string]idempotency.PgxConfig{
		"read-committed":               {},
		"repeatable-read":              {IsoLevel: pgx.RepeatableRead},
		"serializable":                 {IsoLevel: pgx.Serializable},
		"read-committed/database-only": {RecentClaims: -1},
		"serializable/database-only":   {IsoLevel: pgx.Serializable, RecentClaims: -1},
	}
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			idempotencytest.RunStoreTests(t, func(t *testing.T) idempotencytest.StoreBackend {
				return newPgBackend(t, cfg).conformance()
			})
		})
	}
	t.Run("begin-only", func(t *testing.T) {
		t.Parallel()
		idempotencytest.RunStoreTests(t, func(t *testing.T) idempotencytest.StoreBackend {
			return newPgBackendOn(t, idempotency.PgxConfig{}, func(p *pgxpool.Pool) idempotency.PgxBeginner { return beginOnly{p} }).conformance()
		})
	})
}

// TestPgxReplicasShareTheDatabase runs copies of one event through two
// stores on one database, as two replicas would: one runs it.
func TestPgxReplicasShareTheDatabase(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	replica, err := idempotency.NewPgxStore(b.db.Pool, idempotency.PgxConfig{Schema: b.db.Schema})
	require.NoError(t, err)
	stores := []idempotency.Store{b.store, replica}
	outs := make(chan idempotency.Outcome, 20)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			out, err := stores[i%2].Run(t.Context(), idempotency.Claim{EventID: "evt_replicas", EventType: "invoice.paid"},
				func(ctx context.Context, tx idempotency.Tx) error { return b.add(ctx, tx, "c", 1) })
			assert.NoError(t, err)
			outs <- out
		})
	}
	wg.Wait()
	close(outs)
	counts := map[idempotency.Outcome]int{}
	for o := range outs {
		counts[o]++
	}
	require.Equal(t, map[idempotency.Outcome]int{idempotency.OutcomeProcessed: 1, idempotency.OutcomeDuplicate: 19}, counts)
	require.Equal(t, 1, b.get(t, "c"))
}

// newPgDB is a fresh schema with a pool large enough for parallel
// deliveries (deliveryPool).
func newPgDB(tb testing.TB) *pgtest.DB {
	return pgtest.NewWithConfig(tb, deliveryPool)
}

// deliveryPool sizes a test's pool for parallel deliveries.
func deliveryPool(c *pgxpool.Config) { c.MaxConns = deliveryMaxConns }

// deliveryMaxConns is the MaxConns of deliveryPool.
const deliveryMaxConns = 24
