package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxInboxHeldByReadsTheObjectIndex: Inbox.HeldBy is one statement
// that reads the event by its key and its object's unfinished events on
// idempotency_inbox_object_idx, a few rows, whatever the size of the
// inbox: never the table, nor the finished events of the object, nor the
// processing index, which holds an entry for every event leased since the
// last vacuum. With no event processing, as the statistics had it after
// the workers drained the inbox, PostgreSQL read that index for the
// object's events under a lease.
func TestPgxInboxHeldByReadsTheObjectIndex(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	insert := func(what, object, state string, from, n int) {
		t.Helper()
		insertInboxRows(t, b, base, what, "event", object, state, from, n)
	}
	insert("evt_done", "in_x", "processed", 1, 20000)   // the object's past
	insert("evt_other", "in_other", "pending", 1, 5000) // another object's backlog
	insert("evt_failed", "in_x", "failed", 20001, 1)
	insert("evt_waits", "in_x", "pending", 20002, 3)
	conn := analyzedInboxConn(t, b)
	plan, err := idempotency.PgxHeldByPlan(ctx, b.store, conn, "evt_waits_20004", base.Add(time.Hour))
	require.NoError(t, err)
	assert.Contains(t, plan, "idempotency_inbox_object_idx", plan)
	assert.NotContains(t, plan, "Seq Scan", plan)
	assert.NotContains(t, plan, "idempotency_inbox_lease_idx", plan)
	assertFewRowsPassedOver(t, plan, 10)
	require.Contains(t, plan, "rows=3 loops=1)\n", "the holders found:\n%s", plan)
}
