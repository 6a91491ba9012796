package idempotency_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/conformance"
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
	t.Helper()
	db := newPgDB(t)
	cfg.Schema = db.Schema
	store, err := idempotency.NewPgxStore(db.Pool, cfg)
	require.NoError(t, err)
	require.NoError(t, store.Migrate(t.Context()))
	_, err = db.Pool.Exec(t.Context(), `CREATE TABLE counters (name text PRIMARY KEY, value bigint NOT NULL)`)
	require.NoError(t, err)
	return &pgBackend{db: db, store: store}
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

// waiting counts this schema's sessions blocked on a lock.
func (b *pgBackend) waiting(t testing.TB) int {
	var n int
	require.NoError(t, pgtest.AdminPool(t).QueryRow(context.Background(),
		`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND application_name = $1`, b.db.Schema).Scan(&n))
	return n
}

func (b *pgBackend) conformance() conformance.Backend {
	return conformance.Backend{Store: b.store, Add: b.add, Get: b.get, Waiting: b.waiting}
}

func TestPgxStoreConformance(t *testing.T) {
	t.Parallel()
	for _, iso := range []pgx.TxIsoLevel{pgx.ReadCommitted, pgx.RepeatableRead, pgx.Serializable} {
		t.Run(string(iso), func(t *testing.T) {
			t.Parallel()
			conformance.Run(t, func(t *testing.T) conformance.Backend {
				return newPgBackend(t, idempotency.PgxConfig{IsoLevel: iso}).conformance()
			})
		})
	}
}

// newPgDB is a fresh schema with a pool large enough for parallel
// deliveries.
func newPgDB(tb testing.TB) *pgtest.DB {
	return pgtest.NewWithConfig(tb, func(c *pgxpool.Config) { c.MaxConns = 24 })
}
