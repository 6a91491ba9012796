package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestPgxPruneFirstReadOnStaleConnection: the pool hands Prune a
// connection whose session ended while it sat idle (a failover, an
// operator's pg_terminate_backend; the pool pings only a connection idle
// for over a second). Prune's first statement, which finds the oldest
// event awaiting in the inbox, goes to another connection, as its batches
// do, instead of failing the prune with the terminated session's error:
// the prune deletes the claim past its window.
func TestPgxPruneFirstReadOnStaleConnection(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, pool, endSession := stalePool(t, "pruner")
	_, err := db.Pool.Exec(ctx, `INSERT INTO idempotency_events (event_id, event_type, outcome, received_at, processed_at)
VALUES ('evt_stale_old', 'invoice.paid', 'processed', now() - interval '60 days', now() - interval '60 days')`)
	require.NoError(t, err)

	endSession()
	store, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	rep, err := store.Prune(ctx, idempotency.Retention{Pause: -1})
	require.NoError(t, err)
	require.Equal(t, idempotency.PruneReport{EventIDs: 1}, rep)
}

// stalePool is a migrated schema, db, a pool of one connection to it that
// it hands out without a ping, as it does a connection idle under a
// second, and endSession, which ends that connection's session
// (pg_terminate_backend) while it sits idle in the pool, and waits until
// it has ended.
func stalePool(t *testing.T, name string) (db *pgtest.DB, pool *pgxpool.Pool, endSession func()) {
	t.Helper()
	ctx := t.Context()
	db = newPgDB(t)
	owner, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, owner.Migrate(ctx))
	appName := db.Schema + "_" + name
	cfg, err := pgxpool.ParseConfig(db.URL)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["application_name"] = appName
	cfg.MaxConns = 1
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false } // as for a connection idle under a second
	pool, err = pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	admin := pgtest.AdminPool(t)
	return db, pool, func() {
		t.Helper()
		_, err := pool.Exec(ctx, `SELECT 1`) // the pool's one connection, idle
		require.NoError(t, err)
		var n int
		require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE application_name = $1`, appName).Scan(&n))
		require.Equal(t, 1, n)
		faultAwait(t, 10*time.Second, name+"'s session ended", func() bool {
			err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, appName).Scan(&n)
			return err == nil && n == 0
		})
	}
}
