package dashboard_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestListByAccount: the list's form has an account field, and an account
// keeps that connected account's records only (the fixture's are the
// platform's); an object alone spans every account. A list of one
// account's dead letters offers the bulk redrive, whose button names the
// account, and which redrives that account's and no other's (there was
// no bulk redrive of one account: Redrive had no such filter). An account
// that is not text is bad input, in the list and in the redrive, and a
// redrive of one account's tasks is refused (a task has no account):
// nothing moves.
func TestListByAccount(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true})
	_, body := f.get(t, "events?state=dead_letter")
	contains(t, body, `name="account"`)
	contains(t, body, "evt_dead_1")
	_, body = f.get(t, "events?state=dead_letter&account=acct_other")
	notContains(t, body, "evt_dead_1", "the platform's event is not acct_other's")
	notContains(t, body, `id="redrive-all"`, "nothing of acct_other's to redrive")
	contains(t, body, `value="acct_other"`)
	status, body := f.get(t, "events?account=%FF")
	require.Equal(t, http.StatusBadRequest, status)
	contains(t, body, "Bad input")

	// acct_other reconnected: its dead letters, beside acct_else's and the
	// platform's.
	f.deliverOf(t, "acct_other", "invoice.paid", "evt_other_1", "in_other_1")
	f.deliverOf(t, "acct_other", "invoice.paid", "evt_other_2", "in_other_2")
	f.deliverOf(t, "acct_else", "invoice.paid", "evt_else_1", "in_else_1")
	f.work(t)
	dead := []string{"evt_dead_1", "evt_other_1", "evt_other_2", "evt_else_1"}
	for _, id := range dead {
		require.Equal(t, idempotency.InboxDeadLetter, f.state(t, id), id)
	}
	_, body = f.get(t, "events?state=dead_letter&account=acct_other")
	contains(t, body, "evt_other_1")
	notContains(t, body, "evt_else_1")
	contains(t, body, `<input type="hidden" name="account" value="acct_other">`)
	contains(t, body, `id="redrive-all">Redrive every dead_letter event of account acct_other</button>`)

	// A task has neither: its list is refused as its redrive is, 400,
	// not a store error.
	for _, q := range []string{"events?kind=task&account=acct_other", "events?kind=task&object=in_other_1"} {
		code, body := f.get(t, q)
		require.Equal(t, http.StatusBadRequest, code, q)
		contains(t, body, "A task has no object or account")
	}

	for _, form := range []string{
		"kind=task&state=dead_letter&account=acct_other",
		"kind=task&state=dead_letter&object=in_other_1",
		"state=dead_letter&account=%FF",
	} {
		resp := f.post(t, "redrive", form, nil)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, form)
	}
	for _, id := range dead {
		require.Equal(t, idempotency.InboxDeadLetter, f.state(t, id), "%s: nothing moved", id)
	}

	resp := f.post(t, "redrive", "kind=&state=dead_letter&type=&object=&account=acct_other&since=&until=", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "./events?account=acct_other&msg=redriven&n=2&state=dead_letter", resp.Header.Get("Location"))
	require.Equal(t, idempotency.InboxPending, f.state(t, "evt_other_1"))
	require.Equal(t, idempotency.InboxPending, f.state(t, "evt_other_2"))
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, "evt_else_1"), "another account's")
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, "evt_dead_1"), "the platform's")
	_, body = f.get(t, "events?account=acct_other&msg=redriven&n=2&state=dead_letter")
	contains(t, body, "Redrove 2 events")
}
