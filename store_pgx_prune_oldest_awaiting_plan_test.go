package idempotency_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxPruneOldestAwaitingReadsFewRows: before it deletes anything, every
// Prune (every replica's PruneEvery, each interval) asks when the oldest
// event still awaiting in the inbox was received. Written as one min() over
// the four states, PostgreSQL read the inbox by received_at from its oldest
// row and filtered: every finished event older than the backlog was read
// from the table (300,000 rows, 50,000 pending, the oldest awaiting after
// 240,000 processed ones: 35,000 buffers, 260 ms). Each state is to be read
// on idempotency_inbox_state_idx from its oldest row, a few rows each,
// with the same answer: tasks are not events, and a dead letter counts.
func TestPgxPruneOldestAwaitingReadsFewRows(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	inbox := pgx.Identifier{b.db.Schema, "idempotency_inbox"}.Sanitize()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	insert := func(what, kind, state string, from, n int) {
		t.Helper()
		insertInboxRows(t, b, base, what, kind, "", state, from, n)
	}
	insert("task_pending", "task", "pending", -3600, 3) // older than every event: not one
	insert("task_dead", "task", "dead_letter", -3600, 2)
	insert("evt_processed", "event", "processed", 1, 20000)
	insert("evt_dead", "event", "dead_letter", 15000, 1) // the oldest awaiting
	insert("evt_failed", "event", "failed", 16000, 1)
	insert("evt_pending", "event", "pending", 20001, 2000)
	conn := analyzedInboxConn(t, b)
	plan, oldest, err := idempotency.PgxOldestAwaitingPlan(ctx, b.store, conn)
	require.NoError(t, err)
	require.True(t, oldest.Equal(base.Add(15000*time.Second)), "the oldest awaiting is the dead letter: %s", oldest)
	assert.False(t, strings.Contains(plan, "idempotency_inbox_received_at_idx"), "the inbox is read by received_at alone:\n%s", plan)
	assert.Contains(t, plan, "idempotency_inbox_state_idx", plan)
	assertFewRowsPassedOver(t, plan, 100)

	// With nothing awaiting, the answer is none, still from the index.
	_, err = b.db.Pool.Exec(ctx, `UPDATE `+inbox+` SET state = 'processed', finished_at = received_at WHERE kind = 'event'`)
	require.NoError(t, err)
	plan, oldest, err = idempotency.PgxOldestAwaitingPlan(ctx, b.store, conn)
	require.NoError(t, err)
	require.True(t, oldest.IsZero(), "no event awaits: %s", oldest)
	assert.False(t, strings.Contains(plan, "idempotency_inbox_received_at_idx"), plan)
}
