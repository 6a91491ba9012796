package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxPruneForgetsPrunedClaimsLocally: a claim Prune deletes leaves
// this store's memory of recent ids too, as Prune documents: the event
// coming again is applied, not answered duplicate from memory.
func TestPgxPruneForgetsPrunedClaimsLocally(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{RecentClaimsTTL: time.Hour})
	run := func() idempotency.Outcome {
		out, err := b.store.Run(t.Context(), idempotency.Claim{EventID: "evt_pruned_local", EventType: "invoice.paid"},
			func(context.Context, idempotency.Tx) error { return nil })
		require.NoError(t, err)
		return out
	}
	require.Equal(t, idempotency.OutcomeProcessed, run())
	require.Equal(t, idempotency.OutcomeDuplicate, run())
	rep, err := b.store.Prune(t.Context(), idempotency.Retention{Now: func() time.Time { return time.Now().Add(46 * 24 * time.Hour) }})
	require.NoError(t, err)
	require.Equal(t, 1, rep.EventIDs)
	require.Equal(t, idempotency.OutcomeProcessed, run(), "the pruned id is not answered from memory")
}
