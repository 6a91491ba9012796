package dashboard_test

import (
	"net/http"
	"testing"

	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestEventHeldBy: the page of an event still to be applied names the
// events of its object it waits behind (Inbox.HeldBy), each linked to its
// page with its state and next attempt, or says that nothing holds it
// back; a final event's page has no such section. A row without a last
// error (pending, never attempted) shows "—" in the page's text colour,
// not the error's red, as the event's own Last error does.
func TestEventHeldBy(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	f.failing.Store(false)
	// Created in the same second: applied by id, evt_held_a first.
	f.deliver(t, "invoice.paid", "evt_held_a", "in_held")
	f.deliver(t, "invoice.paid", "evt_held_b", "in_held")

	status, body := f.get(t, "event?id=evt_held_b")
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	contains(t, body, `id="held-by"`)
	contains(t, body, `<tr data-id="evt_held_a" data-state="pending">`)
	contains(t, body, `<a href="event?id=evt_held_a">evt_held_a</a>`)
	contains(t, body, "<td>created before it</td>\n<td>—</td>\n</tr>")
	notContains(t, body, `id="held-by-none"`)

	_, body = f.get(t, "event?id=evt_held_a")
	contains(t, body, `id="held-by-none"`, "a later pending event holds nothing back")
	notContains(t, body, `id="held-by"`)

	_, body = f.get(t, "event?id=evt_paid_1")
	notContains(t, body, "held-by", "a processed event waits on nothing")
}
