package dashboard_test

import (
	"testing"
	"time"

	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestOverdueEventHeldByNothingSaysTheWorkers: the page of an event still
// to be applied that nothing holds back and whose next attempt is overdue
// (past by more than five minutes) says that no worker took it, and
// where to look, instead of that it is due at its next attempt, which
// read as if it would be applied soon when the workers were down; one due
// for five minutes or less still says it is due.
func TestOverdueEventHeldByNothingSaysTheWorkers(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	// evt_waiting is due since 4 minutes.
	_, body := f.get(t, "event?id=evt_waiting")
	contains(t, body, `<p class="muted" id="held-by-none">Nothing holds it back: it is due at its next attempt.</p>`)

	f.clock.Advance(2 * time.Minute)
	_, body = f.get(t, "event?id=evt_waiting")
	contains(t, body, `<p class="muted" id="held-by-none">Nothing holds it back, yet no worker took it when it came due: `+
		`the workers are down, busy or cut off from the database. The overview's Last attempt says when a worker last started one; `+
		`the README's runbook, Events wait, says what to do.</p>`)
}
