package dashboard_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestEventPageSaysHowOftenItWasRedriven: an event's page says how many
// times it was redriven and when last, as the page shows a time: "never"
// before the first; each redrive counted, the page's Redrive button and
// the list's bulk Redrive alike, and kept through the attempts after
// it, so that an event dead-lettered again (its attempts counted from 1
// again) tells that it was tried after the fix. On both stores.
func TestEventPageSaysHowOftenItWasRedriven(t *testing.T) {
	t.Parallel()
	for name, open := range bothStores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, open(t), dashboard.Config{AllowRedrive: true})
			f.failing.Store(true)
			f.deliver(t, "invoice.paid", "evt_rd", "in_rd")
			f.work(t)
			require.Equal(t, idempotency.InboxDeadLetter, f.state(t, "evt_rd"))
			redriven := func(want string) {
				t.Helper()
				status, body := f.get(t, "event?id=evt_rd")
				require.Equal(t, http.StatusOK, status)
				contains(t, body, `<dd id="redriven">`+want+`</dd>`)
			}
			redriven("never")

			_, body := f.get(t, "event?id=evt_rd")
			first := f.clock.Now()
			resp := f.post(t, "redrive", pageForm(t, body, "redrive"), nil)
			require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
			f.clock.Advance(time.Minute)
			f.work(t)
			require.Equal(t, idempotency.InboxDeadLetter, f.state(t, "evt_rd"), "dead-lettered again")
			redriven("1 time, last " + first.UTC().Format("2006-01-02 15:04:05 UTC"))

			_, body = f.get(t, "events?state=dead_letter")
			last := f.clock.Now()
			resp = f.post(t, "redrive", pageForm(t, body, "redrive"), nil)
			require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
			f.clock.Advance(time.Minute)
			f.work(t)
			require.Equal(t, 1, record(t, f.inbox, "evt_rd").Attempt, "its attempts counted from 1 again")
			redriven("2 times, last " + last.UTC().Format("2006-01-02 15:04:05 UTC"))
		})
	}
}
