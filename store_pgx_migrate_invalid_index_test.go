package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// The README has migration 007's indexes built beforehand with CREATE
// INDEX CONCURRENTLY on a large inbox. A concurrent build that fails or
// is cancelled (here by a statement timeout while a transaction holds
// the guards) leaves an invalid index of that name, which PostgreSQL
// keeps up to date on every write and never reads. Migrate found it by
// its name and built nothing: Prune and Forget went on without their
// index for good. Migrate builds it again, and the schema ends as a
// fresh one.
func TestPgxMigrateRebuildsAnInvalidIndexBuiltBeforehand(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := newPgDB(t)
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, idempotency.PgxMigrateTo(ctx, store, 6))
	q := quoteIdent(db.Schema)

	// A transaction of a serving replica holds the guards: the concurrent
	// build waits for it, past its operator's statement timeout.
	hold, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer hold.Rollback(context.Background())
	_, err = hold.Exec(ctx, `INSERT INTO `+q+`.idempotency_guards (scope, key, event_id) VALUES ('action:grant', 'in_1', 'evt_1')`)
	require.NoError(t, err)
	conn, err := db.Pool.Acquire(ctx)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `SET statement_timeout = '200ms'`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `CREATE INDEX CONCURRENTLY idempotency_guards_event_id_idx ON `+q+`.idempotency_guards (event_id)`)
	require.ErrorContains(t, err, "statement timeout")
	_, err = conn.Exec(ctx, `RESET statement_timeout`)
	require.NoError(t, err)
	conn.Release()
	require.NoError(t, hold.Rollback(ctx))
	valid := func() bool {
		var v bool
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)`,
			q+`.idempotency_guards_event_id_idx`).Scan(&v))
		return v
	}
	require.False(t, valid(), "the failed build left an invalid index")

	require.NoError(t, store.Migrate(ctx))
	require.True(t, valid(), "Migrate built the index again")
	require.Equal(t, freshCatalog(t), pgxCatalog(t, db.Pool, db.Schema))
}
