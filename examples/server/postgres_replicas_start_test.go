package main

import (
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestOpenPostgresReplicasStartTogether: replicas started at once on a new
// database all start. The business tables' CREATE TABLE IF NOT EXISTS
// raced (PostgreSQL checks for the table before it inserts its type), and
// the losers exited at once on a unique violation that waiting would have
// cured.
func TestOpenPostgresReplicasStartTogether(t *testing.T) {
	t.Parallel()
	for range 5 { // the race was lost in most rounds of six replicas
		db := pgtest.New(t)
		errs := make([]error, 6)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() {
				_, closeStore, err := openPostgres(t.Context(), db.URL, startupWait, slog.New(slog.DiscardHandler))
				if err == nil {
					closeStore()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "replica %d", i)
		}
	}
}
