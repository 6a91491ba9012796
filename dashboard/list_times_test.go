package dashboard_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestListShowsTimesWithoutHover: a list's Received and Next attempt
// cells show the age and, in text under it, the UTC time as every page
// shows it (a <time> with its datetime as RFC 3339), which may break
// after its date and before its UTC, not at a hyphen of the date; the
// time was a title alone, shown on hover, which a keyboard or a touch
// screen cannot reach.
func TestListShowsTimesWithoutHover(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	rec := record(t, f.inbox, "evt_waiting")
	utc := func(at time.Time) string {
		return `<time class="utc" datetime="` + at.UTC().Format(time.RFC3339) + `">` + `<span>` + at.UTC().Format("2006-01-02") + `</span> ` + at.UTC().Format("15:04:05") + ` UTC</time>`
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

// TestPagesShowTimesAlike: the lists and the event page show a time in
// one form, "2026-12-05 11:44:05 UTC", and the list's Received since
// takes it as shown: the lists showed RFC 3339 (2026-12-05T11:44:05Z),
// the event page and the overview this.
func TestPagesShowTimesAlike(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	rec := record(t, f.inbox, "evt_waiting")
	shown := rec.ReceivedAt.UTC().Format("2006-01-02 15:04:05") + " UTC"
	_, event := f.get(t, "event?id=evt_waiting")
	contains(t, event, "<dt>Received</dt><dd>"+shown+" ")
	_, list := f.get(t, "events?state=pending")
	contains(t, list, "<span>"+strings.Replace(shown, " ", "</span> ", 1)+"</time>", "the list's Received, broken after its date")

	_, list = f.get(t, "events?kind=event&since="+url.QueryEscape(shown))
	contains(t, list, `data-id="evt_waiting"`)
	notContains(t, list, `data-id="evt_dead_1"`, "received 90 s before")
}

// TestPagesShowTimesInUTC: a time the inbox holds in another zone (the
// memory store keeps InboxConfig.Now's, pgx reads PostgreSQL's in
// time.Local) is shown in UTC, as its label says, on the event page and
// in the list alike, not as the zone's clock reads it.
func TestPagesShowTimesInUTC(t *testing.T) {
	t.Parallel()
	f := newFixture(t, idempotency.NewMemoryStore(), dashboard.Config{})
	f.clock.Set(time.Date(2026, 12, 5, 12, 44, 5, 0, time.FixedZone("CET", 3600)))
	f.deliver(t, "invoice.paid", "evt_cet", "in_cet")
	require.Equal(t, "CET", record(t, f.inbox, "evt_cet").ReceivedAt.Location().String(), "held in its zone")
	_, event := f.get(t, "event?id=evt_cet")
	contains(t, event, "<dt>Received</dt><dd>2026-12-05 11:44:05 UTC ")
	_, list := f.get(t, "events?state=pending")
	contains(t, list, "<span>2026-12-05</span> 11:44:05 UTC</time>")
}
