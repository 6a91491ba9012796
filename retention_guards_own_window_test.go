package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRetentionGuardsByTheirOwnWindow: guards go after Retention.Guards
// even when Retention.Tasks is longer; each window is its own.
func TestRetentionGuardsByTheirOwnWindow(t *testing.T) {
	t.Parallel()
	type store interface {
		idempotency.Store
		idempotency.Pruner
		LookupGuard(ctx context.Context, scope, key string) (idempotency.GuardRecord, bool, error)
	}
	least := idempotency.DefaultEventIDRetention + idempotency.DefaultDeadLetterRetention
	day := 24 * time.Hour
	for name, s := range map[string]store{"memory": idempotency.NewMemoryStore(), "postgres": newPgBackend(t, idempotency.PgxConfig{}).store} {
		_, err := s.Run(t.Context(), idempotency.Claim{EventID: "evt_guarded", EventType: "invoice.paid"}, func(ctx context.Context, tx idempotency.Tx) error {
			_, err := tx.Guard(ctx, "invoice-credit", "in_guarded")
			return err
		})
		require.NoError(t, err, name)
		later := time.Now().Add(least + 50*day)
		rep, err := s.Prune(t.Context(), idempotency.Retention{Guards: least, Tasks: least + 100*day, Now: func() time.Time { return later }})
		require.NoError(t, err, name)
		require.Equal(t, 1, rep.Guards, "%s: past Guards, within Tasks: %+v", name, rep)
		_, found, err := s.LookupGuard(t.Context(), "invoice-credit", "in_guarded")
		require.NoError(t, err, name)
		require.False(t, found, name)
	}
}
