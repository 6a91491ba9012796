package dashboard_test

import (
	"html"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
	"github.com/seed-a84bb619/idempotency/internal/display"
)

// TestDeadLetterPageSaysWhatToDoNext: the page of a dead-lettered event,
// which no worker retries, says so and what the operator does next: fix
// the cause, then its Redrive button, or, with redrive off,
// idemctl redrive -id with its id.
func TestDeadLetterPageSaysWhatToDoNext(t *testing.T) {
	t.Parallel()
	for _, redrive := range []bool{true, false} {
		f := memoryFixture(t, dashboard.Config{AllowRedrive: redrive})
		status, body := f.get(t, "event?id=evt_dead_1")
		require.Equal(t, http.StatusOK, status)
		then := "Redrive it"
		if !redrive {
			then = "redrive it with <code>idemctl redrive -id evt_dead_1</code>"
		}
		contains(t, body, `<p id="next-step">Dead-lettered after 1 attempt: no worker retries it. Fix the cause its last error names, then `+
			then+`: it goes back to pending, with a fresh attempt budget.</p>`)
		_, body = f.get(t, "event?id=evt_paid_1")
		notContains(t, body, `id="next-step"`, "processed")
	}
}

// TestDeadLetterNextStepQuotesTheID: the idemctl command a dead letter's
// page names, redrive off, quotes an id a shell would split or run (a
// task's key holds what the service's code put in it: here an object id
// with a space, a semicolon and a quote), so that pasted it redrives that
// id and runs nothing else; a plain id is left as it is. It was pasted as
// several words, the text after the semicolon a command of its own.
func TestDeadLetterNextStepQuotesTheID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, bothStores["memory"](t), dashboard.Config{})
	f.failingTasks.Store(true)
	f.deliver(t, "invoice.paid", "evt_odd_key", "in_1 2;echo it's")
	f.work(t)
	id := "task:send-receipt:in_1 2;echo it's"
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, id))
	_, body := f.get(t, "event?id="+url.QueryEscape(id))
	contains(t, body, "<code>idemctl redrive -id "+html.EscapeString(`'task:send-receipt:in_1 2;echo it'\''s'`)+"</code>")
}

// TestDeadLetterNextStepLeavesOutAnIDNoCommandNames: the page of a dead
// letter whose id no idemctl command line names as it is leaves the
// command out and says why: an event's id with a comma, which redrive -id
// reads as a list (here the ids of two other events), or with white
// space at its ends, which -id trims. It printed
// "idemctl redrive -id evt_paid_1,evt_paid_2", which redrives those two.
func TestDeadLetterNextStepLeavesOutAnIDNoCommandNames(t *testing.T) {
	t.Parallel()
	f := newFixture(t, bothStores["memory"](t), dashboard.Config{})
	f.failing.Store(true)
	for _, id := range []string{"evt_paid_1,evt_paid_2", " evt_paid_3"} {
		f.deliver(t, "invoice.paid", id, "in_odd")
		f.work(t)
		require.Equal(t, idempotency.InboxDeadLetter, f.state(t, id))
		_, body := f.get(t, "event?id="+url.QueryEscape(id))
		notContains(t, body, "idemctl redrive -id", id)
		contains(t, body, "redrive it with <code>idemctl redrive</code> by its type and received time (<code>-type</code>, <code>-since</code>): "+
			html.EscapeString(display.IDWordNote))
	}
}
