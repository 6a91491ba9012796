package idempotency_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// The statements that end an attempt (the finish in the event's
// transaction, the settle of a failed attempt) find their row by its
// event id, through the primary key, whatever the statistics say. Their
// state = 'processing' condition also matches the partial lease index,
// which statistics taken while nothing was being applied show empty; a
// plan on it reads every entry of that index (each event leased since
// the last vacuum) and filters them by event id, on every attempt.
func TestPgxInboxFenceUpdatesFindTheRowByItsKey(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	table := pgx.Identifier{b.db.Schema, "idempotency_inbox"}.Sanitize()
	_, err := b.db.Pool.Exec(ctx, `ALTER TABLE `+table+` SET (autovacuum_enabled = false)`)
	require.NoError(t, err)
	// Events applied before the statistics were taken: nothing processing.
	_, err = b.db.Pool.Exec(ctx, `INSERT INTO `+table+` (event_id, event_type, object_id, created, payload, state, received_at, finished_at)
SELECT 'evt_done_' || g, 'invoice.paid', 'in_done_' || g, now(), '\x7b7d', 'processed', now(), now()
FROM generate_series(1, 5000) AS g`)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `ANALYZE `+table)
	require.NoError(t, err)

	conn, err := b.db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	finish, settle, err := idempotency.PgxFenceUpdatePlans(ctx, b.store, conn.Conn())
	require.NoError(t, err)
	for _, plan := range []string{finish, settle} {
		assert.Contains(t, plan, "Index Scan using idempotency_inbox_pkey", plan)
		assert.Contains(t, plan, "Index Cond: (event_id = $1)", plan)
		assert.NotContains(t, plan, "idempotency_inbox_lease_idx", plan)
	}
}
