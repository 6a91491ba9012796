package idempotency_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverContinuesACheckpointWhoseLastEventIsAtSince: a checkpoint
// whose last event was created in Since's own second is continued, as any
// other: the run after a complete run lists again from Since, where the
// RecoveryOverlap behind the checkpoint's last event is cut, and its
// events come out duplicates, applied once.
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

		calls := len(f.calls())
		rep = run()
		require.True(t, rep.Resumed)
		require.Equal(t, strconv.FormatInt(since.Unix(), 10), f.calls()[calls].Query.Get("created[gte]"), "the overlap starts no earlier than Since")
		require.Equal(t, 2, rep.Duplicate, "%+v", rep)
		require.Zero(t, rep.Processed)
		require.Equal(t, "evt_at_since_2", rep.LastEventID)
		app.requireAppliedOnce(t, []string{"evt_at_since_1", "evt_at_since_2"})
	})
}
