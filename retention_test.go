package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRetentionValidate: Validate refuses what Prune refuses, with the same
// error, and accepts what Prune runs.
func TestRetentionValidate(t *testing.T) {
	day := 24 * time.Hour
	for _, c := range []struct {
		r  idempotency.Retention
		ok bool
	}{
		{idempotency.Retention{}, true},
		{idempotency.Retention{EventIDs: 60 * day, Tasks: 150 * day, Guards: 150 * day}, true},
		{idempotency.Retention{EventIDs: 60 * day, Tasks: 60 * day, Guards: 90 * day}, false},
		{idempotency.Retention{EventIDs: 1<<63 - 1, Guards: day}, false},
		{idempotency.Retention{EventIDs: 30 * day}, false},
		{idempotency.Retention{Payloads: 10 * day, DeadLetters: 5 * day}, false},
		{idempotency.Retention{Guards: day}, false},
		{idempotency.Retention{BatchSize: idempotency.MaxPruneBatch + 1}, false},
	} {
		err := c.r.Validate()
		_, pruneErr := idempotency.NewMemoryStore().Prune(t.Context(), c.r)
		if c.ok {
			require.NoError(t, err, "%+v", c.r)
			require.NoError(t, pruneErr, "%+v", c.r)
			continue
		}
		require.Error(t, err, "%+v", c.r)
		require.Equal(t, pruneErr.Error(), err.Error(), "%+v", c.r)
	}
}
