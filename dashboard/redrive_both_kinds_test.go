package dashboard_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestRedriveOfBothKindsSaysRecords: a list of events and tasks together
// (no kind chosen) redrives both, and the page after it counts records,
// not "events", which some of them were not; a redrive of events alone
// still counts events.
func TestRedriveOfBothKindsSaysRecords(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true})
	_, body := f.get(t, "events?state=dead_letter")
	resp := f.post(t, "redrive", pageForm(t, body, "redrive"), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	_, page := f.get(t, resp.Header.Get("Location")[len("./"):])
	contains(t, page, "Redrove 1 record (event or task): it is pending")
	notContains(t, page, "Redrove 1 event", "")

	_, body = f.get(t, "?msg=redriven&n=2")
	contains(t, body, "Redrove 2 events: they are pending")
	_, body = f.get(t, "?msg=redriven-records&n=0&state=dead_letter")
	contains(t, body, "Nothing redriven: no event or task selected is still dead-lettered.")
}
