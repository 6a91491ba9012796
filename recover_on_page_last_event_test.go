package idempotency_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverOnPageReportsWhereTheCheckpointStands: the report OnPage is
// given names, in LastEventID, the event up to which every event was
// handled, as the report Recover returns does: the last event of the
// page (none failed here). It was empty on every page.
func TestRecoverOnPageReportsWhereTheCheckpointStands(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	o := newOutage(t, 30)
	var got, want []string
	opts := o.opts
	opts.Checkpoint, opts.PageSize, opts.RequestsPerSecond = "on-page-last", 10, 100
	opts.OnPage = func(rep idempotency.RecoverReport) {
		got = append(got, rep.LastEventID)
		want = append(want, o.events[rep.Listed-1].id)
	}
	rep, err := app.handler(t).Recover(t.Context(), o.client, opts)
	require.NoError(t, err)
	require.NotEmpty(t, got)
	require.Equal(t, want, got)
	require.Equal(t, rep.LastEventID, got[len(got)-1])
}
