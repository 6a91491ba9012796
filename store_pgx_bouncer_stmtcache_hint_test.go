package idempotency_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestPgxBouncerStatementCacheHint: two processes on pgx's default exec
// mode behind a transaction-pooling PgBouncer before 1.21 meet each
// other's cached statements on the server connections they share. The
// workers of the trial logged `prepared statement "stmtcache_…" already
// exists (SQLSTATE 42P05)` (or `does not exist`, 26000) and nothing of
// the cure the README gives; the store's error now names it.
func TestPgxBouncerStatementCacheHint(t *testing.T) {
	t.Parallel()
	var inboxes []*idempotency.Inbox
	for _, store := range cachedBouncerStores(t) {
		in, err := idempotency.NewInbox(store, idempotency.NewHandlers(), idempotency.InboxConfig{Logger: discardLogger()})
		require.NoError(t, err)
		inboxes = append(inboxes, in)
	}
	var failed error
	for i := 0; i < 50 && failed == nil; i++ {
		_, failed = inboxes[i%2].Stats(t.Context())
	}
	require.Error(t, failed, "no statement of one pool met the other's")
	require.ErrorContains(t, failed, "stmtcache_")
	require.ErrorContains(t, failed, "add default_query_exec_mode=exec to the database URL")
}

// cachedBouncerStores are the stores of two processes on one migrated
// schema behind PgBouncer, each on a pool of its own with pgx's default
// exec mode (cached prepared statements) and two connections: they meet
// each other's cached statements on the server connections they share.
func cachedBouncerStores(t *testing.T) []*idempotency.PgxStore {
	t.Helper()
	cached := func(c *pgxpool.Config) {
		c.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
		c.MaxConns = 2
	}
	db := pgtest.PgBouncer(t).New(t, cached) // one process's pool
	cfg, err := pgxpool.ParseConfig(db.URL)
	require.NoError(t, err)
	cached(cfg)
	other, err := pgxpool.NewWithConfig(t.Context(), cfg) // another process's
	require.NoError(t, err)
	t.Cleanup(other.Close)

	migrated, err := idempotency.NewPgxStore(pgtest.PgBouncer(t).New(t, nil).Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, migrated.Migrate(t.Context()))
	var stores []*idempotency.PgxStore
	for _, pool := range []*pgxpool.Pool{db.Pool, other} {
		store, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: db.Schema})
		require.NoError(t, err)
		stores = append(stores, store)
	}
	return stores
}
