package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// A Tx kept past its handler (saved in a struct, used from a goroutine
// the handler started) failed with "transaction already ended", which
// did not say whose transaction or until when it lives. The error says
// a Tx is the handler's and ends when it returns, on both stores, and
// is still ErrTxDone.
func TestTxAfterItsHandlerSaysWhy(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var kept idempotency.Tx
			_, err := store.Run(t.Context(), idempotency.Claim{EventID: "evt_tx_kept", EventType: "invoice.paid"},
				func(_ context.Context, tx idempotency.Tx) error { kept = tx; return nil })
			require.NoError(t, err)
			_, err = kept.Guard(t.Context(), "invoice-credit", "in_1")
			require.ErrorIs(t, err, idempotency.ErrTxDone)
			require.ErrorContains(t, err, "a Tx is its handler's and ends when the handler returns")
		})
	}
}
