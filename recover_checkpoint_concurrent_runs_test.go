package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverConcurrentRunsNeverMoveTheCheckpointBack: of two runs of one
// checkpoint at once, the slower one's save of an earlier event, after the
// faster one saved a later one, leaves the checkpoint at the later event,
// on both stores: the next run does not list again what the faster one
// handled, nor say it resumed from the earlier event.
func TestRecoverConcurrentRunsNeverMoveTheCheckpointBack(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"memory", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			app := newService(t, kind)
			h := app.handler(t)
			f := newFakeStripe()
			now := time.Now().Truncate(time.Second)
			addPaidEvents(t, f, "overlap", 4, now) // one a second, 00 the oldest
			stripe := f.serve(t)
			opts := func() idempotency.RecoverOptions {
				return idempotency.RecoverOptions{Since: now.Add(-2 * time.Hour), Checkpoint: "two-at-once", RequestsPerSecond: 100,
					Now: func() time.Time { return now }}
			}

			// The slower run handles the first page (00, 01); before it saves
			// 01, the faster run handles every event and saves 03. The slower
			// run is then stopped after its save.
			var fast idempotency.RecoverReport
			ctx, stop := context.WithCancel(t.Context())
			defer stop()
			slow := opts()
			slow.PageSize = 2
			slow.OnEvent = func(res idempotency.Result) {
				if res.EventID != paidEventID("overlap", 1) {
					return
				}
				var err error
				fast, err = h.Recover(t.Context(), stripe, opts())
				require.NoError(t, err)
			}
			slow.OnPage = func(idempotency.RecoverReport) { stop() }
			rep, err := h.Recover(ctx, stripe, slow)
			require.ErrorIs(t, err, context.Canceled)
			require.Equal(t, paidEventID("overlap", 1), rep.LastEventID, "the slower run's own last event")
			require.Equal(t, paidEventID("overlap", 3), fast.LastEventID, "%+v", fast)

			last, found, err := idempotency.RecoveryCheckpoint(t.Context(), app.store, "two-at-once")
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, paidEventID("overlap", 3), last, "the checkpoint stays at the later event")
		})
	}
}
