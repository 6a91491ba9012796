package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// PruneEvery refuses a nil Pruner, or a nil store in the interface, with
// an error before it prunes, as it refuses a bad interval or Retention.
// It panicked on its first prune instead: run in its own goroutine, as it
// is meant to be, that took the process down.
func TestPruneEveryRefusesNilPruner(t *testing.T) {
	t.Parallel()
	for _, p := range []idempotency.Pruner{nil, (*idempotency.MemoryStore)(nil), (*idempotency.PgxStore)(nil)} {
		var err error
		require.NotPanics(t, func() {
			err = idempotency.PruneEvery(t.Context(), p, idempotency.Retention{}, time.Minute, discardLogger())
		}, "PruneEvery with a nil %T", p)
		require.ErrorContains(t, err, "nil Pruner", "%T", p)
	}
}
