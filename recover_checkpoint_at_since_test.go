package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverContinuesACheckpointWhoseLastEventIsAtSince: a checkpoint
// whose last event was created in Since's own second is continued after
// that event, as any other: a run after a complete run lists only what
// came since, not the whole second again.
func TestRecoverContinuesACheckpointWhoseLastEventIsAtSince(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		f := newFakeStripe()
		client := f.serve(t)
		now := time.Now().Truncate(time.Second)
		since := now.Add(-time.Hour)
		f.add(snapshotEvent(t, "evt_at_since_1", "invoice.paid", "in_at_since_1", since.Unix()))
		f.add(snapshotEvent(t, "evt_at_since_2", "invoice.paid", "in_at_since_2", since.Unix()))
		h := app.handler(t)
		run := func() idempotency.RecoverReport {
			rep, err := h.Recover(t.Context(), client, idempotency.RecoverOptions{
				Since: since, Checkpoint: "at-since", Now: func() time.Time { return now },
			})
			require.NoError(t, err)
			return rep
		}
		rep := run()
		require.Equal(t, 2, rep.Processed)
		require.Equal(t, "evt_at_since_2", rep.LastEventID)

		rep = run()
		require.True(t, rep.Resumed)
		require.Zero(t, rep.Listed, "the checkpoint's events are not listed again")
		require.Equal(t, "evt_at_since_2", rep.LastEventID)
	})
}
