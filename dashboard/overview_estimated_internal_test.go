package dashboard

import (
	"bytes"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestOverviewMarksEstimatedCounts: a count the store estimated
// (InboxStats.Estimated) reads "≈" before it, in the events and the
// tasks column, and so do the cards' totals (read "about" aloud); a
// counted one reads the number alone.
func TestOverviewMarksEstimatedCounts(t *testing.T) {
	t.Parallel()
	data := overviewData{
		Events:  []stateCount{{State: idempotency.InboxPending, Count: 3}, {State: idempotency.InboxProcessed, Count: 1200000, Estimated: true}},
		Tasks:   []stateCount{{State: idempotency.InboxPending, Count: 1}, {State: idempotency.InboxProcessed, Count: 480000, Estimated: true}},
		EventsN: 1200003, TasksN: 480001, Estimated: true,
	}
	var buf bytes.Buffer
	require.NoError(t, pages["overview"].ExecuteTemplate(&buf, "layout.html", view{Now: time.Now(), Data: data}))
	cell := func(class, state string) string {
		t.Helper()
		m := regexp.MustCompile(`<td class="num ` + class + `"><a href="events\?kind=[a-z]+&amp;state=` + state + `">(.*?)</a></td>`).FindStringSubmatch(buf.String())
		require.NotNil(t, m, "the %s cell of %s:\n%s", class, state, buf.String())
		return m[1]
	}
	require.Equal(t, `<span title="estimated">≈</span>1200000`, cell("events", "processed"))
	require.Equal(t, `<span title="estimated">≈</span>480000`, cell("tasks", "processed"))
	require.Equal(t, "3", cell("events", "pending"))
	require.Equal(t, "1", cell("tasks", "pending"))
	require.Contains(t, buf.String(), `aria-label="about 1200003 events" id="events-total"><span title="estimated">≈</span>1200003</a>`)
	require.Contains(t, buf.String(), `aria-label="about 480001 tasks" id="tasks-total"><span title="estimated">≈</span>480001</a>`)

	// Every count exact: the numbers alone.
	data.Events[1].Estimated, data.Tasks[1].Estimated, data.Estimated = false, false, false
	buf.Reset()
	require.NoError(t, pages["overview"].ExecuteTemplate(&buf, "layout.html", view{Now: time.Now(), Data: data}))
	require.NotContains(t, buf.String(), "≈")
	require.Contains(t, buf.String(), `aria-label="1200003 events" id="events-total">1200003</a>`)
}
