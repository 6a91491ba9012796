package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxPrunePassesOverLockedRowsOfEveryKind: every kind of row a prune
// deletes (claims, finished events, dead letters, dead and finished tasks,
// guards, CheckOrder's keys, OnCurrent's objects) that a transaction in
// flight holds is passed over, not waited for: the prune deletes the
// others and returns; a later prune deletes the held ones. A batch that
// waited for a held row fails here at the test's deadline instead of
// hanging the suite.
func TestPgxPrunePassesOverLockedRowsOfEveryKind(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	holder := holdRowsOfEveryKind(t, b)

	keys := idempotency.DefaultEventIDRetention + idempotency.DefaultDeadLetterRetention
	r := idempotency.Retention{Guards: keys, Tasks: keys, Pause: -1}
	want := idempotency.PruneReport{EventIDs: 1, Events: 1, DeadLetters: 2, Guards: 2, Tasks: 1, Objects: 1}
	bounded, cancel := context.WithTimeout(ctx, time.Minute) // two prunes: a loaded machine's take seconds
	defer cancel()
	rep, err := b.store.Prune(bounded, r)
	require.NoError(t, err, "a batch waiting for a held row runs into the deadline")
	require.Equal(t, want, rep, "every row but the held ones")

	require.NoError(t, holder.Rollback(ctx))
	rep, err = b.store.Prune(bounded, r)
	require.NoError(t, err)
	require.Equal(t, want, rep, "the held ones, once released")
}

// holdRowsOfEveryKind stores two old rows, "free" and "held", of every
// kind a prune deletes in b's schema, and returns a transaction in flight
// that holds the held ones (FOR UPDATE); the test's end rolls it back.
// Pruned with Guards and Tasks at their least, each pair is deleted; the
// finished tasks go before their arguments would be cleared.
func holdRowsOfEveryKind(t *testing.T, b *pgBackend) pgx.Tx {
	t.Helper()
	ctx := t.Context()
	table := func(name string) string { return pgx.Identifier{b.db.Schema, name}.Sanitize() }
	// Keys are older than the dead letters' receipt by more than the ids'
	// window: an event still awaiting keeps the keys it may find.
	old, older := `now() - interval '400 days'`, `now() - interval '1000 days'`
	for _, sql := range []string{
		`INSERT INTO ` + table("idempotency_events") + ` (event_id, event_type, outcome, received_at, processed_at)
SELECT 'evt_' || h, 'invoice.paid', 'processed', ` + old + `, ` + old + ` FROM unnest(ARRAY['free', 'held']) AS h`,
		`INSERT INTO ` + table("idempotency_inbox") + ` (event_id, kind, event_type, created, payload, state, received_at, finished_at)
SELECT p || h, k, 'invoice.paid', ` + old + `, '\x7b7d', st, ` + old + `, CASE k WHEN 'task' THEN ` + older + ` ELSE ` + old + ` END
FROM unnest(ARRAY['evi_', 'evd_', 'task:p:', 'task:d:'], ARRAY['event', 'event', 'task', 'task'], ARRAY['processed', 'dead_letter', 'processed', 'dead_letter']) AS x(p, k, st),
     unnest(ARRAY['free', 'held']) AS h`,
		`INSERT INTO ` + table("idempotency_guards") + ` (scope, key, event_id, claimed_at) SELECT 's', h, 'evt_' || h, ` + older + ` FROM unnest(ARRAY['free', 'held']) AS h`,
		`INSERT INTO ` + table("idempotency_order") + ` (scope, key, created, event_id) SELECT 's', h, ` + older + `, 'evt_' || h FROM unnest(ARRAY['free', 'held']) AS h`,
		`INSERT INTO ` + table("idempotency_objects") + ` (scope, object_id, fetch_seq, fetched_at) SELECT 's', h, 1, ` + old + ` FROM unnest(ARRAY['free', 'held']) AS h`,
	} {
		_, err := b.db.Pool.Exec(ctx, sql)
		require.NoError(t, err)
	}

	holder, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Rollback(context.Background()) })
	for _, sql := range []string{
		`SELECT 1 FROM ` + table("idempotency_events") + ` WHERE event_id = 'evt_held' FOR UPDATE`,
		`SELECT 1 FROM ` + table("idempotency_inbox") + ` WHERE event_id LIKE '%held' FOR UPDATE`,
		`SELECT 1 FROM ` + table("idempotency_guards") + ` WHERE key = 'held' FOR UPDATE`,
		`SELECT 1 FROM ` + table("idempotency_order") + ` WHERE key = 'held' FOR UPDATE`,
		`SELECT 1 FROM ` + table("idempotency_objects") + ` WHERE object_id = 'held' FOR UPDATE`,
	} {
		_, err := holder.Exec(ctx, sql)
		require.NoError(t, err)
	}
	return holder
}
