package dashboard_test

import (
	"html"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/dashboard"
	"github.com/seed-a84bb619/idempotency/internal/display"
)

// TestSearchNothingFoundSaysWhy: a search that finds no event, task or
// object of its text says why the store may have none, as the event
// page of an unknown id says it: an invoice whose invoice.paid never
// reached the service, or was answered ignored and not stored, showed
// "None." twice, which read as if Stripe had sent nothing. It says too
// how a task is found, by its whole id: a customer's id, the key of its
// welcome email's task, finds nothing. A search that finds anything does
// not say it.
func TestSearchNothingFoundSaysWhy(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	status, body := f.get(t, "search?q=in_never")
	require.Equal(t, http.StatusOK, status)
	contains(t, body, `<p class="muted" id="not-found">No event of this id or object is in the inbox or the ledger: `+html.EscapeString(display.Unknown)+`. `+
		`A task is found by its whole id, task:&lt;name&gt;:&lt;key&gt;, its key what it was enqueued for (a customer id, an invoice id): `+
		`<a href="events?kind=task">the list of tasks</a> shows their ids.</p>`)
	for _, q := range []string{"in_paid_1", "evt_paid_1", "task:send-receipt:in_paid_1"} {
		_, body = f.get(t, "search?q="+q)
		notContains(t, body, `id="not-found"`, q)
	}
}
