package dashboard_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestBulkRedriveKeepsTheType: a list of one type offers to redrive that
// type only, and the redirect comes back to the same list.
func TestBulkRedriveKeepsTheType(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true})
	_, body := f.get(t, "events?state=dead_letter&type=invoice.paid")
	contains(t, body, `id="redrive-all"`)
	contains(t, body, `<input type="hidden" name="type" value="invoice.paid">`)
	resp := f.post(t, "redrive", "kind=&state=dead_letter&type=invoice.paid", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	// No kind chosen: events and tasks are counted apart.
	require.Equal(t, "./events?events=1&msg=redriven-records&state=dead_letter&tasks=0&type=invoice.paid", resp.Header.Get("Location"))
}

// TestRedriveOfEventsAndTasksCountsEachKind: ids of an event and a task
// are neither "tasks" nor "events" in the message: each kind is counted
// apart.
func TestRedriveOfEventsAndTasksCountsEachKind(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true})
	resp := f.post(t, "redrive", "id=evt_dead_1&id=task:send-receipt:in_paid_1", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "./?events=1&msg=redriven-records&tasks=0", resp.Header.Get("Location"))
	require.Equal(t, idempotency.InboxPending, f.state(t, "evt_dead_1"))
}

// TestPagesAnswerHead: a page answers HEAD as GET, without the body.
func TestPagesAnswerHead(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	req, err := http.NewRequest(http.MethodHead, f.srv.URL+mount+"events", nil)
	require.NoError(t, err)
	resp := f.do(t, req)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, resp.body)
}

// TestRedriveButtonsOnlyWhereRedriveWorks: a list of one object offers
// the bulk redrive of that object's events under every account (its
// button says so), and no row has a button for a state that is not
// redriven.
func TestRedriveButtonsOnlyWhereRedriveWorks(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true})
	_, body := f.get(t, "events?state=dead_letter")
	contains(t, body, `id="redrive-all"`)
	contains(t, body, `class="redrive"`)
	_, body = f.get(t, "events?state=dead_letter&object=in_dead_1")
	contains(t, body, "evt_dead_1")
	contains(t, body, `<input type="hidden" name="object" value="in_dead_1">`)
	contains(t, body, `id="redrive-all">Redrive every dead_letter event of object in_dead_1, under every account</button>`)
	_, body = f.get(t, "events?state=processed")
	contains(t, body, "evt_paid_1")
	notContains(t, body, `action="redrive"`, "processed records are not redriven")
}
