package idempotency_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxSearchesByObjectAndTypeReadTheirIndexes: the dashboard's search
// (of an event's id too, which it searches as an object's) and the lists
// by object, idemctl list -object and ledger -object or -type read the
// rows of the object or the type on an index of their own (migration
// 012), a few rows, whatever the size of the inbox and of the ledger.
// Without it, a search read the whole inbox by receipt time or by a
// sequential scan, and the whole ledger: with 1.5 million inbox rows and
// 2 million claims, 400-650 ms each, 1.5 s for a search by event id.
func TestPgxSearchesByObjectAndTypeReadTheirIndexes(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	inbox := pgx.Identifier{b.db.Schema, "idempotency_inbox"}.Sanitize()
	events := pgx.Identifier{b.db.Schema, "idempotency_events"}.Sanitize()
	// 20,000 finished events of 4,000 objects, 3 of in_x, and the claims
	// of every one of them, of 20 types.
	_, err := b.db.Pool.Exec(ctx, `INSERT INTO `+inbox+` (event_id, event_type, object_id, created, payload, state, received_at, finished_at)
SELECT 'evt_' || g, 'type_' || (g % 20), CASE WHEN g % 5000 = 0 THEN 'in_x' ELSE 'in_' || (g % 4000) END,
    $1::timestamptz + make_interval(secs => g), '\x7b7d', 'processed', $1::timestamptz + make_interval(secs => g),
    $1::timestamptz + make_interval(secs => g)
FROM generate_series(1, 20000) AS g`, base)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `INSERT INTO `+events+` (event_id, event_type, object_id, outcome, received_at, processed_at)
SELECT event_id, event_type, object_id, 'processed', received_at, finished_at FROM `+inbox)
	require.NoError(t, err)
	// A rare type: 3 claims.
	_, err = b.db.Pool.Exec(ctx, `UPDATE `+events+` SET event_type = 'rare.type' WHERE event_id IN ('evt_7', 'evt_70', 'evt_700')`)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `ANALYZE `+inbox+`; ANALYZE `+events)
	require.NoError(t, err)

	conn, err := b.db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	check := func(what, plan, index, found string) {
		t.Helper()
		assert.Contains(t, plan, index, "%s:\n%s", what, plan)
		assert.NotContains(t, plan, "Seq Scan", "%s:\n%s", what, plan)
		assertFewRowsPassedOver(t, plan, 10)
		assert.Contains(t, plan, found, "%s: the rows found:\n%s", what, plan)
	}
	for object, found := range map[string]string{"in_x": "rows=4 loops=1)", "in_none": "rows=0 loops=1)"} {
		plan, err := idempotency.PgxListPlan(ctx, b.store, conn.Conn(), idempotency.InboxFilter{ObjectID: object, Limit: 100})
		require.NoError(t, err)
		check("Inbox.List of "+object, plan, "idempotency_inbox_object_id_idx", found)
		plan, err = idempotency.PgxListEventsPlan(ctx, b.store, conn.Conn(), idempotency.EventFilter{ObjectID: object, Limit: 100})
		require.NoError(t, err)
		check("ListEvents of "+object, plan, "idempotency_events_object_id_idx", found)
	}
	for typ, found := range map[string]string{"rare.type": "rows=3 loops=1)", "no.such.type": "rows=0 loops=1)"} {
		plan, err := idempotency.PgxListEventsPlan(ctx, b.store, conn.Conn(), idempotency.EventFilter{EventType: typ, Limit: 100})
		require.NoError(t, err)
		check("ListEvents of "+typ, plan, "idempotency_events_event_type_idx", found)
	}
}
