package idempotency_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxPruneTaskArgsReadsFewRows: every Prune (every replica's
// PruneEvery, each interval) clears the arguments of the tasks finished
// longer than Retention.Payloads ago, and tasks are kept for good by
// default: their rows, cleared, pile up. A batch is to read the tasks it
// clears, not every task ever finished: on idempotency_inbox_finished_idx
// alone it passed over the 50,000 tasks cleared before.
func TestPgxPruneTaskArgsReadsFewRows(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	inbox := pgx.Identifier{b.db.Schema, "idempotency_inbox"}.Sanitize()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	insertInboxRows(t, b, base, "task_cleared", "task", "", "processed", 1, 50000)
	_, err := b.db.Pool.Exec(ctx, `UPDATE `+inbox+` SET payload = '' WHERE kind = 'task'`)
	require.NoError(t, err)
	insertInboxRows(t, b, base, "task_args", "task", "", "processed", 50001, 100)
	insertInboxRows(t, b, base, "evt_processed", "event", "", "processed", 1, 20000)
	conn := analyzedInboxConn(t, b)
	plan, err := idempotency.PgxPruneTaskArgsPlan(ctx, b.store, conn, base.Add(60000*time.Second), 1000)
	require.NoError(t, err)
	assert.Contains(t, plan, "idempotency_inbox_task_args_idx", plan)
	assertFewRowsPassedOver(t, plan, 100)
	assert.Contains(t, plan, "rows=100 loops=1", "the batch clears the 100 tasks with arguments:\n%s", plan)
}
