package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRetentionGuardsWindowEdge: a guard claimed exactly Retention.Guards
// before the prune is kept, and deleted a microsecond later, on both
// stores.
func TestRetentionGuardsWindowEdge(t *testing.T) {
	t.Parallel()
	type store interface {
		idempotency.Store
		idempotency.Pruner
		LookupGuard(ctx context.Context, scope, key string) (idempotency.GuardRecord, bool, error)
	}
	least := idempotency.DefaultEventIDRetention + idempotency.DefaultDeadLetterRetention
	for name, s := range map[string]store{"memory": idempotency.NewMemoryStore(), "postgres": newPgBackend(t, idempotency.PgxConfig{}).store} {
		_, err := s.Run(t.Context(), idempotency.Claim{EventID: "evt_guard_edge", EventType: "invoice.paid"}, func(ctx context.Context, tx idempotency.Tx) error {
			_, err := tx.Guard(ctx, "invoice-credit", "in_guard_edge")
			return err
		})
		require.NoError(t, err, name)
		g, found, err := s.LookupGuard(t.Context(), "invoice-credit", "in_guard_edge")
		require.NoError(t, err, name)
		require.True(t, found, name)
		edge := g.ClaimedAt.Add(least)
		rep, err := s.Prune(t.Context(), idempotency.Retention{Guards: least, Now: func() time.Time { return edge }})
		require.NoError(t, err, name)
		require.Zero(t, rep.Guards, "%s: kept for exactly the window", name)
		rep, err = s.Prune(t.Context(), idempotency.Retention{Guards: least, Now: func() time.Time { return edge.Add(time.Microsecond) }})
		require.NoError(t, err, name)
		require.Equal(t, 1, rep.Guards, "%s: deleted once older than the window", name)
	}
}
