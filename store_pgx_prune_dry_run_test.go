package idempotency_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
	bounded, cancel := context.WithTimeout(ctx, time.Minute) // five prunes and a connection: a loaded machine's take seconds
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

// TestPgxPruneDryRunSessionEndedMidway: a dry run's session ends after it
// read the oldest event awaiting in the inbox (a failover, an operator's
// pg_terminate_backend), and that event is applied meanwhile. The dry run
// runs again from the start on another connection and reports what a
// prune then deletes: the guard past its window, which the event kept
// while it awaited. Run again with the guards' cutoff the first try had
// moved back for that event, it left the guard out.
func TestPgxPruneDryRunSessionEndedMidway(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := pgBackendSchemas.New(t, deliveryPool) // migrated
	// The event pending for 100 days keeps the keys written less than the
	// ids' window (45 days) before it was received: the guard, 140 days
	// old, past the guards' window (135 days).
	for _, sql := range []string{
		`INSERT INTO idempotency_inbox (event_id, kind, event_type, created, payload, state, received_at)
VALUES ('evt_awaiting', 'event', 'invoice.paid', now() - interval '100 days', '\x7b7d', 'pending', now() - interval '100 days')`,
		`INSERT INTO idempotency_guards (scope, key, event_id, claimed_at) VALUES ('s', 'k', 'evt_old', now() - interval '140 days')`,
	} {
		_, err := db.Pool.Exec(ctx, sql)
		require.NoError(t, err)
	}

	// Once the first read of the oldest event awaiting is answered, the
	// event is applied and the session of that read ends.
	admin := pgtest.AdminPool(t)
	var ended atomic.Bool
	cfg, err := pgxpool.ParseConfig(db.URL)
	require.NoError(t, err)
	cfg.ConnConfig.Tracer = connQueryEndTracer(func(conn *pgx.Conn, sql string) {
		if !strings.Contains(sql, "least(") || ended.Swap(true) {
			return
		}
		_, err := db.Pool.Exec(ctx, `UPDATE idempotency_inbox SET state = 'processed', finished_at = now() WHERE event_id = 'evt_awaiting'`)
		require.NoError(t, err)
		var gone bool
		require.NoError(t, admin.QueryRow(ctx, `SELECT pg_terminate_backend($1, 10000)`, int64(conn.PgConn().PID())).Scan(&gone))
		require.True(t, gone, "the dry run's session ended")
	})
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)

	keys := idempotency.DefaultEventIDRetention + idempotency.DefaultDeadLetterRetention
	r := idempotency.Retention{Guards: keys, Pause: -1}
	dry := r
	dry.DryRun = true
	rep, err := store.Prune(ctx, dry)
	require.NoError(t, err, "run again on another connection")
	require.True(t, ended.Load(), "the first try's session ended")
	require.Equal(t, idempotency.PruneReport{Guards: 1}, rep, "the guard no event awaiting keeps")
	rep, err = store.Prune(ctx, r)
	require.NoError(t, err)
	require.Equal(t, idempotency.PruneReport{Guards: 1}, rep, "the prune deletes what the dry run counted")
}

// connQueryEndTracer is a pgx tracer that is called with each statement's
// connection and SQL once the statement has been answered.
type connQueryEndTracer func(conn *pgx.Conn, sql string)

func (f connQueryEndTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, tracedSQL{}, d.SQL)
}

func (f connQueryEndTracer) TraceQueryEnd(ctx context.Context, conn *pgx.Conn, _ pgx.TraceQueryEndData) {
	sql, _ := ctx.Value(tracedSQL{}).(string)
	f(conn, sql)
}
