package idempotency_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// The README has migrations 007's, 009's and 012's indexes built beforehand with
// CREATE INDEX CONCURRENTLY on a large inbox. A concurrent build that
// fails or is cancelled (here while it waits for a transaction that
// writes to its table) leaves an invalid index of that name, which
// PostgreSQL keeps up to date on every write and never reads. Migrate
// found it by its name and built nothing: Prune and Forget went on
// without their index for good. Migrate builds it again, and the schema
// ends as a fresh one.
func TestPgxMigrateRebuildsAnInvalidIndexBuiltBeforehand(t *testing.T) {
	t.Parallel()
	t.Run("007", func(t *testing.T) {
		t.Parallel()
		invalidIndexRebuilt(t, 6, `idempotency_guards_event_id_idx`, `idempotency_guards (event_id)`,
			`INSERT INTO {{schema}}.idempotency_guards (scope, key, event_id) VALUES ('action:grant', 'in_1', 'evt_1')`)
	})
	t.Run("009", func(t *testing.T) {
		t.Parallel()
		invalidIndexRebuilt(t, 8, `idempotency_inbox_task_args_idx`,
			`idempotency_inbox (finished_at) WHERE kind = 'task' AND state IN ('processed', 'skipped') AND payload <> ''`,
			`INSERT INTO {{schema}}.idempotency_inbox (event_id, event_type, created, payload, state, received_at, finished_at, kind)
VALUES ('task:grant:in_1', 'task:grant', now(), '\x7b7d', 'processed', now(), now(), 'task')`)
	})
	t.Run("012", func(t *testing.T) {
		t.Parallel()
		invalidIndexRebuilt(t, 11, `idempotency_events_object_id_idx`,
			`idempotency_events (object_id, processed_at) WHERE object_id <> ''`,
			`INSERT INTO {{schema}}.idempotency_events (event_id, event_type, object_id, outcome, received_at)
VALUES ('evt_1', 'invoice.paid', 'in_1', 'processed', now())`)
	})
}

// invalidIndexRebuilt leaves an invalid index name, on def, in a schema
// migrated up to before, by a concurrent build cancelled while it waits
// for a transaction that ran write; then Migrate.
func invalidIndexRebuilt(t *testing.T, before int, name, def, write string) {
	ctx := t.Context()
	db := newPgDB(t)
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, idempotency.PgxMigrateTo(ctx, store, before))
	q := quoteIdent(db.Schema)

	// A transaction of a serving replica writes to the table: the
	// concurrent build, its index in the catalog by then, waits for it,
	// and its operator cancels it (a statement timeout would do the same
	// once the build waits; one that ran out before, while the build
	// waited for the catalogs, would leave no index).
	hold, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer hold.Rollback(context.Background())
	_, err = hold.Exec(ctx, strings.ReplaceAll(write, "{{schema}}", q))
	require.NoError(t, err)
	conn, err := db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	var pid uint32
	require.NoError(t, conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	built := make(chan error, 1)
	go func() {
		_, err := conn.Exec(ctx, `CREATE INDEX CONCURRENTLY `+name+` ON `+q+`.`+def)
		built <- err
	}()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var waits bool
		assert.NoError(c, db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity
WHERE pid = $1 AND wait_event_type = 'Lock' AND wait_event = 'virtualxid')`, pid).Scan(&waits))
		assert.True(c, waits)
	}, time.Minute, 5*time.Millisecond, "the build waits for the writing transaction")
	_, err = db.Pool.Exec(ctx, `SELECT pg_cancel_backend($1)`, pid)
	require.NoError(t, err)
	require.ErrorContains(t, recv(t, built, "the build"), "canceling statement due to user request")
	require.NoError(t, hold.Rollback(ctx))
	valid := func() bool {
		var v bool
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)`,
			q+`.`+name).Scan(&v))
		return v
	}
	require.False(t, valid(), "the failed build left an invalid index")

	require.NoError(t, store.Migrate(ctx))
	require.True(t, valid(), "Migrate built the index again")
	require.Equal(t, freshCatalog(t), pgxCatalog(t, db.Pool, db.Schema))
}
