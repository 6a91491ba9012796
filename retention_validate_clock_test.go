package idempotency_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRetentionValidateChecksTheClock: Validate is documented to return
// nil exactly when Prune accepts r, and PruneEvery to refuse, before
// pruning, a Retention that breaks a rule. A Retention.Now outside the
// years 1 to 9999 (a fake clock set wrong), which every Prune refuses with
// ErrInvalidKey, passed Validate, and PruneEvery started with it, failing
// at every tick. Both refuse it now.
func TestRetentionValidateChecksTheClock(t *testing.T) {
	t.Parallel()
	r := idempotency.Retention{Now: func() time.Time { return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }}
	store := idempotency.NewMemoryStore()
	_, err := store.Prune(t.Context(), r)
	require.ErrorIs(t, err, idempotency.ErrInvalidKey, "Prune refuses the clock")

	err = r.Validate()
	require.ErrorIs(t, err, idempotency.ErrInvalidKey, "Validate: %v", err)
	require.ErrorContains(t, err, "Retention.Now")

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	err = idempotency.PruneEvery(ctx, store, r, time.Minute, slog.New(slog.DiscardHandler))
	require.ErrorIs(t, err, idempotency.ErrInvalidKey, "PruneEvery refuses at once: %v", err)
	require.NoError(t, ctx.Err(), "PruneEvery returned before its context ended")
}
