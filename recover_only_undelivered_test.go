package idempotency_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverOnlyUndeliveredFindsLaterEventsWhenTheOldestAreDeliveredMeanwhile:
// with OnlyUndelivered, the events the search for the oldest page found
// can stop being listed before its last request (Stripe's retries deliver
// them: after an outage, the oldest are the ones it is retrying). The run
// must still list the undelivered events after them, not end as if there
// were none.
func TestRecoverOnlyUndeliveredFindsLaterEventsWhenTheOldestAreDeliveredMeanwhile(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	f := newFakeStripe()
	client := f.serve(t)
	now := time.Now()
	since := now.Add(-time.Hour).Unix()
	for i, id := range []string{"evt_retried_0", "evt_retried_1", "evt_retried_2"} {
		f.add(snapshotEvent(t, id, "invoice.paid", "in_retried_"+strconv.Itoa(i), since))
	}
	f.add(snapshotEvent(t, "evt_undelivered", "invoice.paid", "in_undelivered", since+100))

	// The search narrows the window to the second of the three events
	// (created[lt]=since+1), then pages through that second; Stripe
	// delivers the three in between.
	windowEnd := strconv.FormatInt(since+1, 10)
	narrowed := 0
	f.fail = func(_ int, r *http.Request) int { // f.mu is held
		if r.URL.Query().Get("created[lt]") == windowEnd {
			if narrowed++; narrowed == 2 {
				for i := range 3 {
					f.events[i].delivered = true
				}
			}
		}
		return 0
	}

	h := app.handler(t)
	rep, err := h.Recover(t.Context(), client, idempotency.RecoverOptions{
		Since: time.Unix(since, 0), OnlyUndelivered: true, PageSize: 2, Checkpoint: "undelivered",
	})
	require.NoError(t, err)
	require.Equal(t, []string{"evt_undelivered"}, app.appliedOrder(), "the undelivered event after the delivered ones is recovered")
	require.Equal(t, 1, rep.Processed)
	require.Equal(t, "evt_undelivered", rep.LastEventID)
}
