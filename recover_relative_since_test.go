package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverRelativeSinceOutlivesItsCheckpoint: a service that recovers
// "the last 5 days" under one checkpoint at each start, as
// examples/server -recover-since does and RecoverOptions.Since invites,
// keeps recovering when it starts again more than 30 days after the
// checkpoint's last event: Since is within the Events API's window and
// after that event, so the old event is not needed to continue.
func TestRecoverRelativeSinceOutlivesItsCheckpoint(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		f := newFakeStripe()
		client := f.serve(t)
		first := time.Now().Truncate(time.Second)
		f.add(snapshotEvent(t, "evt_month_ago", "invoice.paid", "in_month_ago", first.Add(-time.Hour).Unix()))
		h := app.handler(t)
		recoverLast5Days := func(now time.Time) (idempotency.RecoverReport, error) {
			return h.Recover(t.Context(), client, idempotency.RecoverOptions{
				Since: now.Add(-5 * 24 * time.Hour), Checkpoint: "at-start", Now: func() time.Time { return now },
			})
		}
		rep, err := recoverLast5Days(first)
		require.NoError(t, err)
		require.Equal(t, "evt_month_ago", rep.LastEventID)

		later := first.Add(31 * 24 * time.Hour)
		f.add(snapshotEvent(t, "evt_yesterday", "invoice.paid", "in_yesterday", later.Add(-24*time.Hour).Unix()))
		rep, err = recoverLast5Days(later)
		require.NoError(t, err)
		require.Equal(t, 1, rep.Processed)
		require.Equal(t, "evt_yesterday", rep.LastEventID)
		require.Equal(t, []string{"evt_month_ago", "evt_yesterday"}, app.appliedOrder())
	})
}
