package dashboard_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestTableOfRedrivableTasksSaysLookAtTheProvider: a table that offers
// Redrive for a task (the overview's dead letters, a list, a search) says
// above it that a task's failed attempt may have had its effect, and to
// look at the provider before a redrive, as the task's own page says: a
// row's Redrive ran a dead-lettered email task again with no word of it,
// and the customer got the email twice. A table of events alone, and a
// dashboard without redrive, do not say it.
func TestTableOfRedrivableTasksSaysLookAtTheProvider(t *testing.T) {
	t.Parallel()
	const note = `<p class="muted tasks-redrive-note">A task's attempt that failed may have had its effect all the same: ` +
		`look at the provider's log first (a task's page shows its idempotency key), or its Redrive may send the email or make the call again.</p>`
	for _, redrive := range []bool{true, false} {
		f := memoryFixture(t, dashboard.Config{AllowRedrive: redrive})
		_, body := f.get(t, "events?state=dead_letter")
		notContains(t, body, "tasks-redrive-note", "a dead letter of events alone")

		f.failing.Store(false)
		f.failingTasks.Store(true)
		f.deliver(t, "invoice.paid", "evt_mail", "in_mail")
		f.work(t)
		require.Equal(t, idempotency.InboxDeadLetter, f.state(t, "task:send-receipt:in_mail"))
		for _, page := range []string{"", "events?state=dead_letter", "events?kind=task"} {
			_, body := f.get(t, page)
			if !redrive {
				notContains(t, body, "tasks-redrive-note", page)
				continue
			}
			require.Equal(t, 1, strings.Count(body, note), "%s: once, above the table of the task", page)
			require.Less(t, strings.Index(body, note), strings.Index(body, `aria-label="Redrive task:send-receipt:in_mail"`), page)
		}
	}
}
