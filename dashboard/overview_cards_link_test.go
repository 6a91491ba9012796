package dashboard_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestOverviewCardsLinkTheirLists: each count of the overview's cards
// (events, tasks, failed, dead-lettered) links the list it counts, where
// the operator paged about "dead letters grew" clicks first. Each link is
// named for a screen reader by what it counts ("1 dead-lettered"), as
// moving from link to link with Tab reads a link alone, and the number
// said nothing of what it counts.
func TestOverviewCardsLinkTheirLists(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	status, body := f.get(t, "")
	require.Equal(t, http.StatusOK, status)
	contains(t, body, `<a href="events?kind=event" aria-label="5 events" id="events-total">5</a>`)
	contains(t, body, `<a href="events?kind=task" aria-label="2 tasks" id="tasks-total">2</a>`)
	contains(t, body, `<a href="events?state=failed" aria-label="0 failed, to be retried" id="failed-total">0</a>`)
	contains(t, body, `<a href="events?state=dead_letter" aria-label="1 dead-lettered" id="dead-total">1</a>`)
}
