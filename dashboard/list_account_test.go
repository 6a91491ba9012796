package dashboard_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestListByAccount: the list's form has an account field, and an account
// keeps that connected account's records only (the fixture's are the
// platform's); an object alone spans every account. No bulk redrive of one
// account: Redrive has no such filter. An account that is not text is
// bad input. The account was not read: every record was listed.
func TestListByAccount(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true})
	_, body := f.get(t, "events?state=dead_letter")
	contains(t, body, `name="account"`)
	contains(t, body, "evt_dead_1")
	_, body = f.get(t, "events?state=dead_letter&account=acct_other")
	notContains(t, body, "evt_dead_1", "the platform's event is not acct_other's")
	notContains(t, body, `id="redrive-all"`, "no bulk redrive of one account")
	contains(t, body, `value="acct_other"`)
	status, body := f.get(t, "events?account=%FF")
	require.Equal(t, http.StatusBadRequest, status)
	contains(t, body, "Bad input")
}
