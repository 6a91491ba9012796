package idempotency_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestSkipWithoutReasonSaysSo: Skip("") (or a SkipError without a reason)
// keeps "no reason given" as its reason, as Permanent(nil) does, in the
// ledger's SkipReason of an event and a task's LastError, on both stores:
// an empty reason read in a log line or on the dashboard as a bug of the
// library.
func TestSkipWithoutReasonSaysSo(t *testing.T) {
	t.Parallel()
	require.EqualError(t, idempotency.Skip(""), "idempotency: skipped: no reason given")
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ledger := store.(interface {
				LookupEvent(ctx context.Context, eventID string) (idempotency.EventRecord, bool, error)
			})
			for id, skip := range map[string]error{
				"evt_skip_empty":       idempotency.Skip(""),
				"evt_skip_error_empty": fmt.Errorf("wrapped: %w", &idempotency.SkipError{}),
			} {
				out, err := store.Run(t.Context(), idempotency.Claim{EventID: id, EventType: "invoice.paid"},
					func(context.Context, idempotency.Tx) error { return skip })
				require.NoError(t, err)
				require.Equal(t, idempotency.OutcomeSkipped, out)
				rec, ok, err := ledger.LookupEvent(t.Context(), id)
				require.NoError(t, err)
				require.True(t, ok)
				require.Equal(t, "no reason given", rec.SkipReason, id)
			}

			rec, _ := skippedTask(t, store, idempotency.Skip(""))
			require.Equal(t, "no reason given", rec.LastError)
		})
	}
}
