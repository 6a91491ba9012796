package dashboard_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestOverviewCardsLinkTheirLists: each count of the overview's cards
// (events, tasks, failed, dead-lettered) links the list it counts, where
// the operator paged about "dead letters grew" clicks first.
func TestOverviewCardsLinkTheirLists(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	status, body := f.get(t, "")
	require.Equal(t, http.StatusOK, status)
	contains(t, body, `<a href="events?kind=event" id="events-total">5</a>`)
	contains(t, body, `<a href="events?kind=task" id="tasks-total">2</a>`)
	contains(t, body, `<a href="events?state=failed" id="failed-total">0</a>`)
	contains(t, body, `<a href="events?state=dead_letter" id="dead-total">1</a>`)
}
