package idempotency_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxPruneDryRunCompilesNoPlan: a dry run counts the claims older than
// Retention.EventIDs by asking the inbox about each, which the planner
// prices by every claim the range may hold: on a ledger of 1.5 million
// claims, 200,000 of them expired, past every threshold of JIT
// compilation, and compiling the plan took 450 to 600 ms of a statement
// run once. The dry run's transaction turns JIT off, as the lease's does:
// here the thresholds are 0, so that any plan would be compiled.
func TestPgxPruneDryRunCompilesNoPlan(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	old := time.Now().Add(-60 * 24 * time.Hour)
	_, err := b.db.Pool.Exec(ctx, `INSERT INTO `+pgx.Identifier{b.db.Schema, "idempotency_events"}.Sanitize()+`
    (event_id, event_type, object_id, outcome, received_at, processed_at)
SELECT 'evt_old_' || g, 'invoice.paid', 'in_' || g, 'processed', $1, $1 FROM generate_series(1, 1000) AS g`, old)
	require.NoError(t, err)

	plan, err := idempotency.PgxDryRunClaimsPlan(ctx, b.store, time.Now().Add(-45*24*time.Hour))
	require.NoError(t, err)
	assert.Contains(t, plan, "rows=1000 loops=1", "the count reads the 1,000 expired claims:\n%s", plan)
	assert.NotContains(t, plan, "JIT:", "the count's plan was compiled:\n%s", plan)
}
