package idempotencytest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testEarlyGuardOtherScope: a key of Claim.Guards answers Guard of its own
// scope only. A Guard of another scope with the same key (the handler's
// own "invoice-credit" of the invoice id an action's early claim names)
// is claimed apart, and the action's Guard of that key is still first.
// (No test failed when PgxStore matched an early claim by its key alone:
// the other scope's Guard was answered from it, no row was kept for that
// scope, and the action's own Guard then found its early row taken.)
func testEarlyGuardOtherScope(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	const early, other, key = "action:notify", "invoice-credit", "in_scope_apart"
	out, err := b.Store.Run(ctx, claimGuarding("evt_scope_apart", early, key), func(ctx context.Context, tx idempotency.Tx) error {
		requireGuardFirst(ctx, t, tx, other, key, true, "another scope's guard of the same key is first")
		requireGuardFirst(ctx, t, tx, early, key, true, "the early claim's own scope is still first")
		return b.Add(ctx, tx, "c", 1)
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	for _, scope := range []string{early, other} {
		g, ok, err := b.Store.LookupGuard(ctx, scope, key)
		require.NoError(t, err)
		require.True(t, ok, "guard %s/%s kept", scope, key)
		require.Equal(t, "evt_scope_apart", g.EventID, scope)
	}
}
