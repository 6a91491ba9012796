package dashboard_test

import (
	"html"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestOldLongSkipReasonPageIsBounded: a ledger row skipped before skip
// reasons were cut at 1000 bytes may hold a reason of any length (here 10
// MB, written in SQL over a skip's row, on PostgreSQL: a MemoryStore's
// rows are all cut as they are written); the event's page shows its first
// 1000 bytes, a rune cut in half there dropped, as a new row keeps:
// LookupEvent reads it so. The page held it whole.
func TestOldLongSkipReasonPageIsBounded(t *testing.T) {
	t.Parallel()
	db := idempotencytest.Postgres(t)
	f := newFixture(t, db.NewStore(t, idempotency.PgxConfig{}), dashboard.Config{})
	f.deliver(t, "charge.refunded", "evt_old_skip", "ch_old_skip")
	f.work(t)
	// 999 bytes, then "é" (2 bytes) across the 1000th, then 10 MB more.
	head := "refunds are booked by hand: " + strings.Repeat("x", 999-len("refunds are booked by hand: "))
	_, err := db.Pool.Exec(t.Context(), `UPDATE idempotency_events SET skip_reason = $1 || 'é' || repeat(' and more', 1200000)
WHERE event_id = 'evt_old_skip'`, head)
	require.NoError(t, err)

	status, body := f.get(t, "event?id=evt_old_skip")
	require.Equal(t, 200, status)
	require.Less(t, len(body), 100_000, "no megabytes on the page")
	contains(t, body, "<dt>Skip reason</dt><dd>"+html.EscapeString(head)+"</dd>")
}
