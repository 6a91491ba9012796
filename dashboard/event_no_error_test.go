package dashboard_test

import (
	"testing"

	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestEventWithoutErrorShowsNoError: the page of an event applied at its
// first attempt shows "—" for its last error, not in the error's red (the
// class "err" the lists and the page give an error's text); a dash in red
// read as an error that could not be shown.
func TestEventWithoutErrorShowsNoError(t *testing.T) {
	t.Parallel()
	f := newFixture(t, bothStores["memory"](t), dashboard.Config{})
	f.deliver(t, "invoice.paid", "evt_ok_1", "in_ok_1")
	f.work(t)
	_, body := f.get(t, "event?id=evt_ok_1")
	contains(t, body, `id="state">processed<`)
	contains(t, body, `<dd id="last-error">—</dd>`)
}
