package dashboard_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestRedriveOfBothKindsCountsEachKind: a list of events and tasks
// together (no kind chosen) redrives both, and the page after it counts
// the events and the tasks apart, as idemctl redrive does, not one total
// of records; a redrive of events alone still counts events.
func TestRedriveOfBothKindsCountsEachKind(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true})
	f.failing.Store(false)
	f.failingTasks.Store(true)
	f.work(t) // evt_waiting is applied; its receipt task is dead-lettered
	task := "task:send-receipt:in_waiting"
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, task))

	_, body := f.get(t, "events?state=dead_letter")
	resp := f.post(t, "redrive", pageForm(t, body, "redrive"), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	require.Equal(t, "./events?events=1&msg=redriven-records&state=dead_letter&tasks=1", resp.Header.Get("Location"))
	_, page := f.get(t, resp.Header.Get("Location")[len("./"):])
	contains(t, page, "Redrove 1 event and 1 task: they are pending, with a fresh attempt budget.")
	require.Equal(t, idempotency.InboxPending, f.state(t, "evt_dead_1"))
	require.Equal(t, idempotency.InboxPending, f.state(t, task))

	for q, want := range map[string]string{
		"?msg=redriven&n=2":                                        "Redrove 2 events: they are pending",
		"?msg=redriven-records&events=2&tasks=0":                   "Redrove 2 events: they are pending",
		"?msg=redriven-records&events=0&tasks=1":                   "Redrove 1 task: it is pending",
		"?msg=redriven-records&events=3&tasks=2":                   "Redrove 3 events and 2 tasks: they are pending",
		"?msg=redriven-records&events=0&tasks=0&state=dead_letter": "Nothing redriven: no event or task selected is still dead-lettered.",
	} {
		_, body = f.get(t, q)
		contains(t, body, want, q)
	}
	for _, q := range []string{"events=1", "tasks=1", "events=-1&tasks=2", "events=1&tasks=x", "n=2",
		"events=9223372036854775807&tasks=1"} {
		_, body = f.get(t, "?msg=redriven-records&"+q)
		notContains(t, body, `id="flash"`, q)
	}
}
