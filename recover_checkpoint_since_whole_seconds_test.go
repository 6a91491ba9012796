package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverCheckpointKeepsSinceInWholeSeconds: a checkpoint keeps its
// Since in whole seconds, as the Events API takes it, on both stores: a
// run of the checkpoint with a Since earlier in the same second (one read
// from a clock, continued with one written in seconds) continues it. (No
// test failed when the checkpoint kept Since to the nanosecond, and
// refused that run with ErrCheckpointMismatch.)
func TestRecoverCheckpointKeepsSinceInWholeSeconds(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		f := newFakeStripe()
		client := f.serve(t)
		now := time.Now().Truncate(time.Second)
		second := now.Add(-time.Hour)
		f.add(snapshotEvent(t, "evt_whole_1", "invoice.paid", "in_whole_1", second.Add(time.Minute).Unix()))
		h := app.handler(t)
		run := func(since time.Time) (idempotency.RecoverReport, error) {
			return h.Recover(t.Context(), client, idempotency.RecoverOptions{
				Since: since, Checkpoint: "whole-seconds", RequestsPerSecond: 100, Now: func() time.Time { return now },
			})
		}
		rep, err := run(second.Add(700 * time.Millisecond))
		require.NoError(t, err)
		require.Equal(t, "evt_whole_1", rep.LastEventID)

		rep, err = run(second)
		require.NoError(t, err, "Since in the second the checkpoint started at")
		require.True(t, rep.Resumed)
		require.Equal(t, 1, rep.Duplicate, "%+v", rep)
		app.requireAppliedOnce(t, []string{"evt_whole_1"})
	})
}
