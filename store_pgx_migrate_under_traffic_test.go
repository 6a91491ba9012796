package idempotency_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// A replica of the new release migrates a schema of the release before
// (up to 006) while a replica of that release still serves: one of its
// event transactions has claimed a guard, and enqueues a task, an inbox
// row, next. Migrate builds migration 007's index on the inbox, then waits
// to build the one on the guards; the event transaction waits for the
// inbox: PostgreSQL breaks the deadlock by failing one of them, and
// Migrate, which waited first, is the one it fails (a backend checks for
// a deadlock after deadlock_timeout; the old replica's is raised here, so
// that on a loaded machine its check cannot come first). Migrate runs again, as
// an event transaction does after a deadlock, rather than failing the
// replica's start with "deadlock detected".
func TestPgxMigrateRetriesADeadlockWithOldReplicaTraffic(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := newPgDB(t)
	_, err := db.Pool.Exec(ctx, `DROP SCHEMA `+quoteIdent(db.Schema)+` CASCADE`)
	require.NoError(t, err)
	applyMigrationsUpTo(t, &pgBackend{db: db}, db.Schema, 6)
	q := quoteIdent(db.Schema)

	// The old replica's event transaction, up to its guard.
	old, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer old.Rollback(context.Background())
	var super bool
	require.NoError(t, old.QueryRow(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&super))
	if super { // deadlock_timeout is a superuser's setting; the test's own server runs as one
		_, err = old.Exec(ctx, `SET LOCAL deadlock_timeout = '30s'`)
		require.NoError(t, err)
	}
	_, err = old.Exec(ctx, `INSERT INTO `+q+`.idempotency_events (event_id, event_type, outcome, received_at) VALUES ('evt_old', 'invoice.paid', 'processed', now())`)
	require.NoError(t, err)
	_, err = old.Exec(ctx, `INSERT INTO `+q+`.idempotency_guards (scope, key, event_id) VALUES ('action:grant', 'in_1', 'evt_old')`)
	require.NoError(t, err)

	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	migrated := make(chan error, 1)
	go func() { migrated <- store.Migrate(ctx) }()
	// Migrate holds the inbox and waits for the guards.
	for waitingRuns(t, db.Schema, store) == 0 { // each poll is a query
	}
	// The old transaction enqueues its task: it waits for the inbox.
	_, oldErr := old.Exec(ctx, `INSERT INTO `+q+`.idempotency_inbox (event_id, event_type, created, payload, state, received_at, next_attempt_at, kind)
VALUES ('task:grant:in_1', 'task:grant', now(), '\x7b7d', 'pending', now(), now(), 'task')`)
	if oldErr == nil {
		require.NoError(t, old.Commit(ctx))
	} else {
		require.NoError(t, old.Rollback(ctx))
	}
	require.NoError(t, <-migrated)
	require.NoError(t, oldErr, "the old replica's transaction went through")
	var versions int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM `+q+`.idempotency_migrations`).Scan(&versions))
	files, err := filepath.Glob("migrations/*.up.sql")
	require.NoError(t, err)
	require.Equal(t, len(files), versions)
}
