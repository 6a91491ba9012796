package dashboard_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestNextAttemptDueFiveMinutesIsNotOverdue: a next attempt past by five
// minutes exactly is not marked overdue, in the list or on its page; one
// past by a microsecond more is: "more than five minutes", as the
// README's Events wait alert. (No test failed when five minutes exactly
// was marked.)
func TestNextAttemptDueFiveMinutesIsNotOverdue(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	const mark = `<span class="overdue">overdue</span>`
	rec, found, err := f.inbox.Lookup(t.Context(), "evt_waiting")
	require.NoError(t, err)
	require.True(t, found)
	f.clock.Advance(rec.NextAttemptAt.Add(5 * time.Minute).Sub(f.clock.Now())) // due since 5 minutes exactly
	_, body := f.get(t, "events?state=pending")
	contains(t, body, `<td class="next-attempt">5m 0s ago<time`)
	_, body = f.get(t, "event?id=evt_waiting")
	contains(t, body, `(5m 0s ago)</span></dd>`)

	f.clock.Advance(time.Microsecond)
	_, body = f.get(t, "events?state=pending")
	contains(t, body, `<td class="next-attempt">`+mark+` 5m 0s ago<time`)
	_, body = f.get(t, "event?id=evt_waiting")
	contains(t, body, `(5m 0s ago)</span> `+mark+`</dd>`)
}
