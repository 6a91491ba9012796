package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestShowOldLongSkipReasonIsBounded: a ledger row skipped before skip
// reasons were cut at 1000 bytes may hold a reason of any length (here 10
// MB, written in SQL over a skip's row); show prints its first 1000 bytes,
// a rune cut in half there dropped, as a new row keeps, and so does
// -json's skip_reason: LookupEvent reads it so. Both printed it whole.
func TestShowOldLongSkipReasonIsBounded(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	_, err := s.store.Run(t.Context(), idempotency.Claim{EventID: "evt_old_skip", EventType: "charge.refunded", ObjectID: "ch_old"},
		func(context.Context, idempotency.Tx) error { return idempotency.Skip("refunds are booked by hand") })
	require.NoError(t, err)
	// 999 bytes, then "é" (2 bytes) across the 1000th, then 10 MB more.
	head := "refunds are booked by hand: " + strings.Repeat("x", 999-len("refunds are booked by hand: "))
	_, err = s.db.Pool.Exec(t.Context(), `UPDATE `+pgx.Identifier{s.db.Schema, "idempotency_events"}.Sanitize()+` SET skip_reason = $1 || 'é' || repeat(' and more', 1200000)
WHERE event_id = 'evt_old_skip'`, head)
	require.NoError(t, err)

	r := idemctl(t, s.db, nil, "show", "evt_old_skip")
	require.Equal(t, 0, r.code, r.stderr)
	require.Less(t, len(r.stdout), 2000, "no megabytes on the terminal")
	require.Contains(t, r.stdout, "\n  skip reason   "+head+"\n  processed at  ")

	doc := decode[showJSON](t, idemctl(t, s.db, nil, "show", "-json", "evt_old_skip"))
	require.NotNil(t, doc.Ledger)
	require.Equal(t, len(head), len(doc.Ledger.SkipReason), "-json's skip_reason")
	require.Equal(t, head, doc.Ledger.SkipReason, "-json's skip_reason")
}
