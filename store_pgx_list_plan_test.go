package idempotency_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxListReadsFromItsStateAndPosition: Inbox.List of one state (the
// dashboard's and idemctl's lists of dead letters, failed or pending
// records, and the probe of each full page for a page after it) reads
// that state's rows on idempotency_inbox_state_idx, newest received
// first, and stops at its limit; a later page starts at its position.
// The state written state = ANY of an array of one, the planner could not
// take the index's order for the list's, and read the inbox by receipt
// time from its newest row, for dead letters older than most of it (1.1
// million rows passed over, 545 ms, for the probe after a page of
// dead-lettered tasks); and a later page read every record newer than its
// position, which only a condition with an OR bounded (a page after
// 500,000 records: 215 ms).
func TestPgxListReadsFromItsStateAndPosition(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	inbox := pgx.Identifier{b.db.Schema, "idempotency_inbox"}.Sanitize()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Two years of tasks, one in a hundred dead-lettered, then the
	// events of the last weeks.
	insertInboxRows(t, b, base, "task:send:done", "task", "", "processed", 1, 20000)
	_, err := b.db.Pool.Exec(ctx, `UPDATE `+inbox+` SET state = 'dead_letter' WHERE received_at < $1 AND extract(epoch FROM received_at - $2::timestamptz)::int % 100 = 0`,
		base.Add(20000*time.Second), base)
	require.NoError(t, err)
	insertInboxRows(t, b, base, "evt_dead", "event", "", "dead_letter", 20001, 50)
	insertInboxRows(t, b, base, "evt_done", "event", "", "processed", 20051, 20000)
	conn := analyzedInboxConn(t, b)
	for _, limit := range []int{1, 20} {
		plan, err := idempotency.PgxListPlan(ctx, b.store, conn, idempotency.InboxFilter{
			States: []idempotency.InboxState{idempotency.InboxDeadLetter}, Kind: idempotency.KindTask, Limit: limit,
			After: idempotency.InboxPosition{EventID: "task:send:done_15000", ReceivedAt: base.Add(15000 * time.Second)},
		})
		require.NoError(t, err)
		assert.Contains(t, plan, "idempotency_inbox_state_idx", plan)
		assert.NotContains(t, plan, "idempotency_inbox_received_at_idx", plan)
		assertFewRowsPassedOver(t, plan, 100)
		require.Regexp(t, `^Limit .*rows=`+map[int]string{1: "1", 20: "20"}[limit]+` loops=1\)`, plan)
	}

	// A later page of every record starts at its position on the index
	// by receipt time, where it read every newer record and passed over
	// them (a page after 500,000 records: 215 ms, now 12).
	plan, err := idempotency.PgxListPlan(ctx, b.store, conn, idempotency.InboxFilter{
		Limit: 100, After: idempotency.InboxPosition{EventID: "task:send:done_15000", ReceivedAt: base.Add(15000 * time.Second)},
	})
	require.NoError(t, err)
	assert.Contains(t, plan, "Index Cond: (received_at <= ", plan)
	assertFewRowsPassedOver(t, plan, 100)
	require.Regexp(t, `^Limit .*rows=100 loops=1\)`, plan)
}
