package dashboard_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestListTimeRange: the list keeps the records received in its time
// range, and its bulk redrive moves those only, not every dead letter of
// the state; a time that is not one, or a range that selects nothing, is
// a bad filter (400, with what to type), and nothing moves: a time as
// the pages show it, but in a zone other than UTC, too.
func TestListTimeRange(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true})
	f.clock.Advance(time.Hour)
	f.failing.Store(true)
	f.deliver(t, "invoice.paid", "evt_dead_late", "in_dead_late")
	f.work(t)
	since := url.QueryEscape(f.clock.Now().Add(-time.Minute).Format(time.RFC3339))

	_, body := f.get(t, "events?kind=event&state=dead_letter&since="+since)
	contains(t, body, "evt_dead_late")
	notContains(t, body, "evt_dead_1", "received an hour before")
	contains(t, body, `name="since" value="`+f.clock.Now().Add(-time.Minute).Format(time.RFC3339))

	resp := f.post(t, "redrive", "kind=event&state=dead_letter&type=&since="+since+"&until=", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "./events?kind=event&msg=redriven&n=1&since="+since+"&state=dead_letter", resp.Header.Get("Location"))
	require.Equal(t, idempotency.InboxPending, f.state(t, "evt_dead_late"))
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, "evt_dead_1"), "outside the range")

	// A time as the pages show it names UTC: one that names another zone
	// is not a time, not read as UTC.
	for _, q := range []string{"since=yesterday", "until=2026-13-01", "since=2026-11-20&until=2026-11-20", "until=9999-12-31T23:00:00-05:00",
		"since=" + url.QueryEscape("2026-11-20 14:30:00 CET")} {
		status, body := f.get(t, "events?"+q)
		require.Equal(t, http.StatusBadRequest, status, q)
		contains(t, body, "Received", q)
		resp := f.post(t, "redrive", "state=dead_letter&"+q, nil)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, q)
	}
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, "evt_dead_1"))
	// What to type names a time as the pages show it too.
	_, body = f.get(t, "events?since=yesterday")
	contains(t, body, "Received since: not a time. Use 2026-11-20, 2026-11-20T14:30 (UTC), 2026-11-20 14:30:00 UTC or ")

	// A page's position that is not one this dashboard wrote.
	for _, q := range []string{"after=evt_dead_1", "after_received=2026-11-20T00:00:00Z", "after=evt_dead_1&after_received=x",
		"after=evt_dead_1&after_received=9999-12-31T23:00:00-05:00", "after=evt_dead_1&after_received=0001-01-01T00:00:00Z"} {
		status, body := f.get(t, "events?"+q)
		require.Equal(t, http.StatusBadRequest, status, q)
		contains(t, body, "start from the first page", q)
	}
}
