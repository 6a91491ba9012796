package dashboard_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestListShowsTimesWithoutHover: a list's Received and Next attempt
// cells show the age and, in text under it, the UTC time as RFC 3339 (a
// <time> with its datetime), which may break after its T; the time was a
// title alone, shown on hover, which a keyboard or a touch screen cannot
// reach.
func TestListShowsTimesWithoutHover(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	rec, ok, err := f.inbox.Lookup(t.Context(), "evt_waiting")
	require.NoError(t, err)
	require.True(t, ok)
	utc := func(at time.Time) string {
		return `<time class="utc" datetime="` + at.UTC().Format(time.RFC3339) + `">` + `<span>` + at.UTC().Format("2006-01-02T") + `</span><wbr><span>` + at.UTC().Format("15:04:05Z") + `</span></time>`
	}
	for _, page := range []string{"events?state=pending", "search?q=in_waiting"} {
		_, body := f.get(t, page)
		contains(t, body, `<td class="received">4m 0s ago`+utc(rec.ReceivedAt)+`</td>`, page)
		contains(t, body, `<td class="next-attempt">4m 0s ago`+utc(rec.NextAttemptAt)+`</td>`, page)
		notContains(t, body, `title=`, page)
	}
	// A dead letter is due never: no time.
	_, body := f.get(t, "events?state=dead_letter")
	contains(t, body, `<td class="next-attempt">—</td>`)
}
