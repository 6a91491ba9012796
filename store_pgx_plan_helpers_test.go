package idempotency_test

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// insertInboxRows stores n rows straight into b's inbox, as a plan test
// needs many: ids what_<g> for g from `from`, of kind, about object (""
// for none), created and received g seconds after base, in state; due at
// base when pending or failed, leased for a day after base when
// processing, finished when received when in a final state (processed,
// skipped, ignored, dead-lettered).
func insertInboxRows(t *testing.T, b *pgBackend, base time.Time, what, kind, object, state string, from, n int) {
	t.Helper()
	inbox := pgx.Identifier{b.db.Schema, "idempotency_inbox"}.Sanitize()
	_, err := b.db.Pool.Exec(t.Context(), `INSERT INTO `+inbox+` (kind, event_id, event_type, object_id, created, payload, state, received_at,
    next_attempt_at, lease_until, finished_at)
SELECT $1, $2 || g, 'invoice.paid', $7, $4::timestamptz + make_interval(secs => g), '\x7b7d', $3, $4::timestamptz + make_interval(secs => g),
    CASE WHEN $3 IN ('pending', 'failed') THEN $4::timestamptz END,
    CASE WHEN $3 = 'processing' THEN $4::timestamptz + interval '1 day' END,
    CASE WHEN $3 IN ('processed', 'skipped', 'ignored', 'dead_letter') THEN $4::timestamptz + make_interval(secs => g) END
FROM generate_series($5::int, $5::int + $6::int - 1) AS g`, kind, what+"_", state, base, from, n, object)
	require.NoError(t, err, what)
}

// analyzedInboxConn analyzes b's inbox, as autovacuum would have after
// the rows a plan test inserted, and returns a connection of b's pool for
// the test's EXPLAINs, released when the test ends.
func analyzedInboxConn(t *testing.T, b *pgBackend) *pgx.Conn {
	t.Helper()
	_, err := b.db.Pool.Exec(t.Context(), `ANALYZE `+pgx.Identifier{b.db.Schema, "idempotency_inbox"}.Sanitize())
	require.NoError(t, err)
	conn, err := b.db.Pool.Acquire(t.Context())
	require.NoError(t, err)
	t.Cleanup(conn.Release)
	return conn.Conn()
}

// assertFewRowsPassedOver fails t when a node of plan (EXPLAIN ANALYZE's)
// read and passed over limit rows or more.
func assertFewRowsPassedOver(t *testing.T, plan string, limit int) {
	t.Helper()
	for _, m := range regexp.MustCompile(`Rows Removed by Filter: (\d+)`).FindAllStringSubmatch(plan, -1) {
		n, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		assert.Less(t, n, limit, "rows read and passed over:\n%s", plan)
	}
}
