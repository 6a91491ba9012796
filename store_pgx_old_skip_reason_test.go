package idempotency_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxOldLongSkipReasonReadBounded: a ledger row skipped before skip
// reasons were cut at 1000 bytes may hold a reason of any length (here
// 10 MB, written in SQL); LookupEvent and ListEvents give its first 1000
// bytes, a rune cut in half there dropped, as a new row keeps, so that
// EventRecord.SkipReason holds to its bound and no operator's tool prints
// or pages megabytes. The row itself is unchanged. They gave it whole.
func TestPgxOldLongSkipReasonReadBounded(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	// 999 bytes, then "é" (2 bytes) across the 1000th, then 10 MB more.
	longSkipReasonHead := "invoice has no account_id: " + strings.Repeat("x", 999-len("invoice has no account_id: "))
	at := time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)
	_, err := b.db.Pool.Exec(t.Context(), `INSERT INTO idempotency_events (event_id, event_type, object_id, outcome, skip_reason, received_at, processed_at)
VALUES ('evt_old_long', 'invoice.paid', 'in_old_long', 'skipped', $1 || 'é' || repeat(' and more', 1200000), $2, $2)`, longSkipReasonHead, at)
	require.NoError(t, err)

	rec, ok, err := b.store.LookupEvent(t.Context(), "evt_old_long")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, idempotency.OutcomeSkipped, rec.Outcome)
	require.Equal(t, len(longSkipReasonHead), len(rec.SkipReason), "LookupEvent")
	require.Equal(t, longSkipReasonHead, rec.SkipReason, "LookupEvent")

	recs, err := b.store.ListEvents(t.Context(), idempotency.EventFilter{ObjectID: "in_old_long"})
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Equal(t, len(longSkipReasonHead), len(recs[0].SkipReason), "ListEvents")
	require.Equal(t, longSkipReasonHead, recs[0].SkipReason, "ListEvents")

	var stored int
	require.NoError(t, b.db.Pool.QueryRow(t.Context(), `SELECT octet_length(skip_reason) FROM idempotency_events WHERE event_id = 'evt_old_long'`).Scan(&stored))
	require.Greater(t, stored, 10_000_000, "the row is unchanged")
}
