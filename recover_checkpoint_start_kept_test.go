package idempotency_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverCheckpointKeepsTheStartOfTheRunThatStoredItFirst: two runs
// that start one checkpoint together leave it with the Since of the run
// that stored it first, on both stores: the other's saves move its last
// event alone, and a later run with that first Since continues it. (No
// test failed when PgxStore's save set the checkpoint's since too, nor
// when the memory store's replaced the whole checkpoint.)
func TestRecoverCheckpointKeepsTheStartOfTheRunThatStoredItFirst(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		now := time.Now()
		early, late := now.Add(-3*time.Hour), now.Add(-2*time.Hour)
		fFirst, fSecond := newFakeStripe(), newFakeStripe()
		addPaidEvents(t, fFirst, "cp_start", 2, now)
		addPaidEvents(t, fSecond, "cp_start", 2, now)
		h := app.handler(t)
		opts := func(since time.Time) idempotency.RecoverOptions {
			return idempotency.RecoverOptions{Since: since, Checkpoint: "cp-start", RequestsPerSecond: 100}
		}
		clientFirst := fFirst.serve(t)
		// The second run has loaded no checkpoint when its first request
		// lets the first run start one and finish.
		var firstErr error
		fSecond.fail = func(n int, _ *http.Request) int {
			if n == 1 {
				_, firstErr = h.Recover(t.Context(), clientFirst, opts(early))
			}
			return 0
		}
		rep, err := h.Recover(t.Context(), fSecond.serve(t), opts(late))
		require.NoError(t, firstErr)
		require.NoError(t, err)
		require.Equal(t, 2, rep.Duplicate, "%+v", rep)

		rep, err = h.Recover(t.Context(), clientFirst, opts(early))
		require.NoError(t, err, "a run with the Since the checkpoint was stored with")
		require.True(t, rep.Resumed)
		require.Equal(t, paidEventID("cp_start", 1), rep.LastEventID)
		app.requireAppliedOnce(t, []string{paidEventID("cp_start", 0), paidEventID("cp_start", 1)})
	})
}
