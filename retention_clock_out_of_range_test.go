package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPruneClockOutOfRangeRefusedAlike: a Retention.Now outside the years
// 1 to 9999 (a fake clock set wrong) deletes nothing, on either store: the
// prune is refused with ErrInvalidKey naming the clock. MemoryStore deleted
// every claim; PgxStore sent a cutoff PostgreSQL cannot hold, or one pgx
// wraps around to another century.
func TestPruneClockOutOfRangeRefusedAlike(t *testing.T) {
	t.Parallel()
	pg := newPgBackend(t, idempotency.PgxConfig{})
	type store interface {
		idempotency.Store
		idempotency.Pruner
		LookupEvent(ctx context.Context, eventID string) (idempotency.EventRecord, bool, error)
	}
	stores := map[string]store{"memory": idempotency.NewMemoryStore(), "postgres": pg.store}
	for name, p := range stores {
		_, err := p.Run(t.Context(), idempotency.Claim{EventID: "evt_clock", EventType: "invoice.paid"}, nil)
		require.NoError(t, err, name)
	}
	for _, at := range []time.Time{time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(1<<62, 0), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		for name, p := range stores {
			rep, err := p.Prune(t.Context(), idempotency.Retention{Now: func() time.Time { return at }})
			require.ErrorIs(t, err, idempotency.ErrInvalidKey, "%s, clock at %s", name, at)
			require.ErrorContains(t, err, "Retention.Now", "%s, clock at %s", name, at)
			require.Zero(t, rep.Total(), "%s, clock at %s", name, at)
			_, found, err := p.LookupEvent(t.Context(), "evt_clock")
			require.NoError(t, err)
			require.True(t, found, "%s, clock at %s: the claim was deleted", name, at)
		}
	}
	// The last instant of the year 9999 is a clock like any other.
	last := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	for name, p := range stores {
		rep, err := p.Prune(t.Context(), idempotency.Retention{Now: func() time.Time { return last }})
		require.NoError(t, err, name)
		require.Equal(t, idempotency.PruneReport{EventIDs: 1}, rep, name)
	}
}
