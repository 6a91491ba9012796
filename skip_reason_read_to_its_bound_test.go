package idempotency_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestSkipReasonIsReadToItsBound: a skip reason of ASCII cut at its
// bound, 1000 bytes, is read back whole, all 1000, by LookupEvent and
// ListEvents, on both stores. (No test failed when PgxStore read 999
// characters of it: each test's reason had a rune cut in half at the
// 1000th byte, and so 999 bytes to give back.)
func TestSkipReasonIsReadToItsBound(t *testing.T) {
	t.Parallel()
	head := "invoice has no account_id: " + strings.Repeat("x", 1000-len("invoice has no account_id: "))
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := store.Run(t.Context(), idempotency.Claim{EventID: "evt_bound_skip", EventType: "invoice.paid", ObjectID: "in_bound"},
				func(context.Context, idempotency.Tx) error { return idempotency.Skip(head + " and more") })
			require.NoError(t, err)
			events := store.(interface {
				ledger
				ListEvents(ctx context.Context, f idempotency.EventFilter) ([]idempotency.EventRecord, error)
			})
			rec, ok, err := events.LookupEvent(t.Context(), "evt_bound_skip")
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, head, rec.SkipReason, "LookupEvent")
			recs, err := events.ListEvents(t.Context(), idempotency.EventFilter{ObjectID: "in_bound"})
			require.NoError(t, err)
			require.Len(t, recs, 1)
			require.Equal(t, head, recs[0].SkipReason, "ListEvents")
		})
	}
}
