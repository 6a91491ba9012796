package dashboard_test

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestDeadLetteredTaskPageSaysLookAtTheProvider: the page of a
// dead-lettered task, whose last attempt may have had its effect though it
// failed (the provider accepted the email, and its answer was lost or
// came after the timeout), says to look at the provider before a redrive,
// which runs it again: the page said only to fix the cause and redrive, and
// the customer got the email twice. An event's page does not say it: its
// attempts roll back.
func TestDeadLetteredTaskPageSaysLookAtTheProvider(t *testing.T) {
	t.Parallel()
	for _, redrive := range []bool{true, false} {
		f := newFixture(t, idempotency.NewMemoryStore(), dashboard.Config{AllowRedrive: redrive})
		f.failingTasks.Store(true)
		f.deliver(t, "invoice.paid", "evt_task_dead", "in_task_dead")
		f.work(t)
		const id = "task:send-receipt:in_task_dead"
		require.Equal(t, idempotency.InboxDeadLetter, f.state(t, id))
		_, body := f.get(t, "event?id="+url.QueryEscape(id))
		contains(t, body, `<p id="next-step-task">`+taskEffectWarning+`</p>`, redrive)

		f.failing.Store(true)
		f.deliver(t, "invoice.paid", "evt_event_dead", "in_event_dead")
		f.work(t)
		require.Equal(t, idempotency.InboxDeadLetter, f.state(t, "evt_event_dead"))
		_, body = f.get(t, "event?id=evt_event_dead")
		contains(t, body, `id="next-step"`)
		notContains(t, body, `id="next-step-task"`, "an event's attempts roll back")
	}
}

// taskEffectWarning is what a dead-lettered task's page says of its
// attempts.
const taskEffectWarning = "A task's attempt that failed may have had its effect all the same (the provider accepted the request, " +
	"and its answer was lost or came after the timeout): look at the provider's log first, for the idempotency key above, or a redrive may send the email or make the call again. " +
	"A provider given the task's idempotency key (TaskRun.IdempotencyKey) does it once, for as long as it keeps keys (Stripe: at least a day)."
