package idempotency_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// Prune keeps the claim of an event still in the inbox, asking the inbox
// about each claim of a batch. Written as NOT EXISTS, PostgreSQL planned
// it as an anti join against every unfinished inbox row: with statistics
// taken while the inbox was drained and a backlog of 20,000 pending events
// since, a nested loop compared each claim of the batch with each pending
// row, materialized (50,000 pending rows: 50 million comparisons, 9 s per
// batch of 1,000, where 35 ms before the check); with fresh statistics a
// merge anti join read the whole inbox by its primary key. The inbox is
// to be probed by its primary key, once per claim, whatever it holds.
func TestPgxPruneClaimsProbesTheInboxByID(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	events := pgx.Identifier{b.db.Schema, "idempotency_events"}.Sanitize()
	inbox := pgx.Identifier{b.db.Schema, "idempotency_inbox"}.Sanitize()
	_, err := b.db.Pool.Exec(ctx, `INSERT INTO `+events+` (event_id, event_type, outcome, received_at, processed_at)
SELECT 'evt_' || g, 'invoice.paid', 'processed', now(), now() - interval '100 days' + (g * 400 || ' s')::interval
FROM generate_series(1, 20000) AS g`)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `INSERT INTO `+inbox+` (event_id, event_type, object_id, created, payload, state, received_at, finished_at)
SELECT 'evt_' || g, 'invoice.paid', 'in_' || g, now(), '\x7b7d', 'processed', now(), now() FROM generate_series(1, 20000) AS g`)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `ALTER TABLE `+inbox+` SET (autovacuum_enabled = false)`)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `ANALYZE `+events)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `ANALYZE `+inbox)
	require.NoError(t, err)
	// A backlog builds up after the statistics were taken.
	_, err = b.db.Pool.Exec(ctx, `INSERT INTO `+inbox+` (event_id, event_type, object_id, created, payload, state, received_at, next_attempt_at)
SELECT 'evt_backlog_' || g, 'invoice.paid', 'in_backlog_' || g, now(), '\x7b7d', 'pending', now(), now()
FROM generate_series(1, 20000) AS g`)
	require.NoError(t, err)

	conn, err := b.db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	plan, err := idempotency.PgxPruneClaimsPlan(ctx, b.store, conn.Conn())
	require.NoError(t, err)
	for _, join := range []string{"Anti Join", "Materialize", "Join Filter"} {
		assert.False(t, strings.Contains(plan, join), "the inbox is joined (%s), not probed per claim:\n%s", join, plan)
	}
	assert.Contains(t, plan, "Index Scan using idempotency_inbox_pkey on idempotency_inbox i", plan)
	assert.Contains(t, plan, "Index Cond: (event_id = e.event_id)", plan)

	// Fresh statistics do not change it.
	_, err = b.db.Pool.Exec(ctx, `ANALYZE `+inbox)
	require.NoError(t, err)
	plan, err = idempotency.PgxPruneClaimsPlan(ctx, b.store, conn.Conn())
	require.NoError(t, err)
	assert.False(t, strings.Contains(plan, "Anti Join"), plan)
	assert.Contains(t, plan, "Index Cond: (event_id = e.event_id)", plan)
}
