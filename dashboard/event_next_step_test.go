package dashboard_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/dashboard"
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
