package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRetentionValidateChecksTheClock: Validate is documented to return
// nil exactly when Prune accepts r. A Retention.Now outside the years 1 to
// 9999 (a fake clock set wrong), which every Prune refuses with
// ErrInvalidKey, passed Validate. (PruneEvery, as the README says, logs
// such a prune's failure and tries again at the next tick.)
func TestRetentionValidateChecksTheClock(t *testing.T) {
	t.Parallel()
	r := idempotency.Retention{Now: func() time.Time { return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }}
	store := idempotency.NewMemoryStore()
	_, err := store.Prune(t.Context(), r)
	require.ErrorIs(t, err, idempotency.ErrInvalidKey, "Prune refuses the clock")

	err = r.Validate()
	require.ErrorIs(t, err, idempotency.ErrInvalidKey, "Validate: %v", err)
	require.ErrorContains(t, err, "Retention.Now")
}
