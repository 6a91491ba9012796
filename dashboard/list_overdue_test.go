package dashboard_test

import (
	"testing"
	"time"

	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestNextAttemptOverdueIsMarked: a record still to be applied whose next
// attempt is past by more than five minutes (the README's "Events wait"
// alert), which workers behind, down or cut off leave there, is marked
// "overdue" in text in the lists' Next attempt cell and on its page; one
// due for five minutes or less, its Received time and a dead letter (due
// never) are not.
func TestNextAttemptOverdueIsMarked(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	const mark = `<span class="overdue">overdue</span>`
	f.clock.Advance(time.Minute - time.Millisecond) // evt_waiting is due since just under 5 minutes
	for _, page := range []string{"events?state=pending", "event?id=evt_waiting"} {
		_, body := f.get(t, page)
		notContains(t, body, mark, page)
	}
	_, body := f.get(t, "events?state=pending")
	contains(t, body, `<td class="next-attempt">4m 59s ago<time`)

	f.clock.Advance(time.Second + time.Millisecond)
	for _, page := range []string{"events?state=pending", "search?q=in_waiting"} {
		_, body := f.get(t, page)
		contains(t, body, `<td class="next-attempt">`+mark+` 5m 1s ago<time`, page)
		contains(t, body, `<td class="received">5m 1s ago<time`, page)
	}
	_, body = f.get(t, "event?id=evt_waiting")
	contains(t, body, `(5m 1s ago)</span> `+mark+`</dd>`)
	_, body = f.get(t, "events?state=dead_letter")
	notContains(t, body, mark, "a dead letter is due never")
}
