package dashboard_test

import (
	"testing"

	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestRecordsShowTheAccount: the inbox's record tables (a list, the
// search of an object) and the ledger's records of an object have an
// Account column, "—" for the platform's own events, so that an id
// Stripe reuses in every connected account (a capability's
// card_payments), listed under every account, tells its rows apart.
// They had none: the rows of two accounts' objects read the same.
func TestRecordsShowTheAccount(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	f.failing.Store(false)
	f.deliverOf(t, "acct_other", "invoice.paid", "evt_shared_other", "in_shared")
	f.deliver(t, "invoice.paid", "evt_shared_own", "in_shared")
	f.work(t)
	for _, page := range []string{"events?object=in_shared", "search?q=in_shared"} {
		_, body := f.get(t, page)
		contains(t, body, `<th>Object</th><th>Account</th>`, page)
		contains(t, body, `<td class="id"><a href="search?q=in_shared">in_shared</a></td>
<td class="id account">acct_other</td>`, page)
		contains(t, body, `<td class="id"><a href="search?q=in_shared">in_shared</a></td>
<td class="id account">—</td>`, page)
	}
	_, body := f.get(t, "search?q=in_shared")
	contains(t, body, `<thead><tr><th>Id</th><th>Type</th><th>Account</th><th>Outcome</th><th>Processed</th></tr></thead>`)
	contains(t, body, `<a href="event?id=evt_shared_other">evt_shared_other</a></td><td>invoice.paid</td><td class="id account">acct_other</td>`)
	contains(t, body, `<a href="event?id=evt_shared_own">evt_shared_own</a></td><td>invoice.paid</td><td class="id account">—</td>`)
}
