package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverMalformedNewestEventStillBoundsTheSearch: when the newest
// event of a window of more than a page is malformed, its created still
// bounds the search for the oldest page: the run lists every event, and
// counts the malformed one failed. (No test failed when a malformed
// event's created was dropped: the search took it for an event created
// before Since and stopped the run with ErrStripeAPI.)
func TestRecoverMalformedNewestEventStillBoundsTheSearch(t *testing.T) {
	t.Parallel()
	f := newFakeStripe()
	client := f.serve(t)
	now := time.Now()
	addPaidEvents(t, f, "bad_newest", 3, now)
	f.add(eventWith(t, snapshotEvent(t, "evt_bad_newest_x", "invoice.paid", "in_bad_newest", now.Add(-time.Hour).Unix()+10),
		"data", "not an object"))
	app := newService(t, "memory")
	rep, err := app.handler(t).Recover(t.Context(), client, idempotency.RecoverOptions{
		Since: now.Add(-2 * time.Hour), PageSize: 2, RequestsPerSecond: 100,
	})
	require.NoError(t, err)
	require.Equal(t, 4, rep.Listed, "%+v", rep)
	require.Equal(t, 3, rep.Processed, "%+v", rep)
	require.Equal(t, []string{"evt_bad_newest_x"}, rep.FailedIDs)
	require.Equal(t, paidEventID("bad_newest", 2), rep.LastEventID)
	app.requireAppliedOnce(t, []string{paidEventID("bad_newest", 0), paidEventID("bad_newest", 1), paidEventID("bad_newest", 2)})
}
