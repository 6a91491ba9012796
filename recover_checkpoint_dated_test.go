package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverCheckpointIsDatedByNow: a checkpoint is dated by
// RecoverOptions.Now each time a run moves it, on both stores (on
// PostgreSQL the updated_at of its row, which tells an operator when a
// recovery last made progress). (No test failed when the checkpoint was
// stored without its date.)
func TestRecoverCheckpointIsDatedByNow(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		f := newFakeStripe()
		client := f.serve(t)
		now := time.Now().Truncate(time.Second)
		h := app.handler(t)
		run := func(at time.Time) {
			t.Helper()
			_, err := h.Recover(t.Context(), client, idempotency.RecoverOptions{
				Since: now.Add(-time.Hour), Checkpoint: "dated", RequestsPerSecond: 100, Now: func() time.Time { return at },
			})
			require.NoError(t, err)
		}
		dated := func() time.Time {
			t.Helper()
			at, found, err := idempotency.RecoveryCheckpointUpdatedAt(t.Context(), app.store, "dated")
			require.NoError(t, err)
			require.True(t, found)
			return at
		}

		f.add(snapshotEvent(t, "evt_dated_1", "invoice.paid", "in_dated_1", now.Add(-30*time.Minute).Unix()))
		first := now.Add(123456 * time.Microsecond)
		run(first)
		require.True(t, first.Equal(dated()), "dated %s, not %s", dated(), first)

		f.add(snapshotEvent(t, "evt_dated_2", "invoice.paid", "in_dated_2", now.Add(-20*time.Minute).Unix()))
		second := first.Add(time.Minute)
		run(second)
		require.True(t, second.Equal(dated()), "moved at %s: dated %s", second, dated())
	})
}
