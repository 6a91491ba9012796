package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverCheckpointIsFoundByItsNameAlone: a run of a new checkpoint
// starts it, beside another checkpoint the store holds, on both stores.
// (No test failed when PgxStore loaded whichever checkpoint it found
// first, whatever its name.)
func TestRecoverCheckpointIsFoundByItsNameAlone(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		f := newFakeStripe()
		client := f.serve(t)
		now := time.Now()
		addPaidEvents(t, f, "by_name", 1, now)
		h := app.handler(t)
		for _, name := range []string{"by-name-a", "by-name-b"} {
			rep, err := h.Recover(t.Context(), client, idempotency.RecoverOptions{
				Since: now.Add(-2 * time.Hour), Checkpoint: name, RequestsPerSecond: 100,
			})
			require.NoError(t, err, name)
			require.False(t, rep.Resumed, name)
			require.Equal(t, paidEventID("by_name", 0), rep.LastEventID, name)
		}
	})
}
