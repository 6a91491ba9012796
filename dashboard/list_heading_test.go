package dashboard_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestListHeadingNamesItsFilter: a list's heading, and so its title (the
// browser's tab, its history), names what its filter selects as its bulk
// redrive's button does, so that the list of one account's dead letters
// is told from every dead letter's; with an object or an account, or
// ignored, it lists events, which a task is none of.
func TestListHeadingNamesItsFilter(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	for path, want := range map[string]string{
		"events?state=dead_letter": "Dead-lettered events and tasks",
		"events?state=dead_letter&type=invoice.paid&account=acct_1Conn&since=2026-11-20": "Dead-lettered events of type invoice.paid of account acct_1Conn received since 2026-11-20",
		"events?object=in_dead_1":                 "Events of object in_dead_1, under every account",
		"events?state=ignored":                    "Ignored events",
		"events?kind=task&until=2026-11-20T14:30": "Tasks received before 2026-11-20T14:30",
	} {
		status, body := f.get(t, path)
		require.Equal(t, http.StatusOK, status, path)
		contains(t, body, "<title>"+want+" · Stripe webhooks</title>", path)
		contains(t, body, "<h1>"+want+"</h1>", path)
	}
}
