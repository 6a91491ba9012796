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

// TestPgxPruneDryRunTakesNoLock: a dry run neither takes the prune lock
// nor locks a row. While another prune's batch holds the lock (a prune
// then returns ErrPruneRunning) and a transaction holds a row of every
// kind, a dry run counts every row, the held ones too, without waiting,
// also on a database that may only be read; once they are released, the
// prune deletes what it counted. A dry run that waited for the lock or a
// row fails here at the test's deadline instead of hanging the suite.
func TestPgxPruneDryRunTakesNoLock(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	holder := holdRowsOfEveryKind(t, b)
	_, err := holder.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('idempotency.prune:' || $1, 0))`, b.db.Schema)
	require.NoError(t, err)

	keys := idempotency.DefaultEventIDRetention + idempotency.DefaultDeadLetterRetention
	r := idempotency.Retention{Guards: keys, Tasks: keys, Pause: -1}
	dry := r
	dry.DryRun = true
	bounded, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	want := idempotency.PruneReport{EventIDs: 2, Events: 2, DeadLetters: 4, Guards: 4, Tasks: 2, Objects: 2}
	rep, err := b.store.Prune(bounded, dry)
	require.NoError(t, err, "a dry run waiting for the prune lock or a held row runs into the deadline")
	require.Equal(t, want, rep, "every row, the held ones too")

	cfg, err := pgxpool.ParseConfig(pgtest.WithOptions(b.db.URL, "-c default_transaction_read_only=on"))
	require.NoError(t, err)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	ro, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: b.db.Schema})
	require.NoError(t, err)
	rep, err = ro.Prune(bounded, dry)
	require.NoError(t, err, "a dry run writes nothing")
	require.Equal(t, want, rep, "on a database that may only be read")

	_, err = b.store.Prune(bounded, r)
	require.ErrorIs(t, err, idempotency.ErrPruneRunning, "the prune lock is held")
	require.NoError(t, holder.Rollback(ctx))
	rep, err = b.store.Prune(bounded, r)
	require.NoError(t, err)
	require.Equal(t, want, rep, "the prune deletes what the dry run counted")
}
