package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxTxOnMemoryStoreSaysWhatToDo: a handler that writes through PgxTx,
// tested on a MemoryStore, panics on its first event. The panic said only
// that the Tx is not a PgxStore's; it now names the two ways to test such
// a handler: on PostgreSQL with idempotencytest.Postgres, or with its
// writes behind a fake that applies them in tx.AfterCommit.
func TestPgxTxOnMemoryStoreSaysWhatToDo(t *testing.T) {
	t.Parallel()
	var recovered any
	_, err := idempotency.NewMemoryStore().Run(t.Context(), idempotency.Claim{EventID: "evt_pgxtx_memory", EventType: "invoice.paid"},
		func(_ context.Context, tx idempotency.Tx) error {
			defer func() { recovered = recover() }()
			idempotency.PgxTx(tx)
			return nil
		})
	require.NoError(t, err)
	text, ok := recovered.(string)
	require.True(t, ok, "PgxTx panicked with %T %v", recovered, recovered)
	require.Contains(t, text, "is not a PgxStore transaction")
	require.Contains(t, text, "idempotencytest.Postgres")
	require.Contains(t, text, "tx.AfterCommit")
}
