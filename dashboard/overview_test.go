package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestOverviewCountsAndBounds: the overview's counts are the inbox's, events
// and tasks apart, "—" for tasks ignored (a task never is); it lists at most 20 dead letters and links to the rest;
// a list's limit is bounded, so that a huge inbox never makes a page of
// unbounded rows.
func TestOverviewCountsAndBounds(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	for i := range 20 {
		f.deliver(t, "invoice.paid", fmt.Sprintf("evt_dead_more_%02d", i), fmt.Sprintf("in_dead_more_%02d", i))
	}
	f.work(t)
	st, err := f.inbox.Stats(t.Context())
	require.NoError(t, err)
	require.Equal(t, 22, st.Counts[idempotency.InboxDeadLetter], "evt_waiting failed too")

	_, body := f.get(t, "")
	for state, want := range map[idempotency.InboxState][2]int{ // events, tasks
		idempotency.InboxPending: {0, 0}, idempotency.InboxProcessed: {2, 2}, idempotency.InboxSkipped: {1, 0},
		idempotency.InboxDeadLetter: {22, 0}, idempotency.InboxFailed: {0, 0}, idempotency.InboxIgnored: {0, -1},
	} {
		row := regexp.MustCompile(`(?s)<tr data-state="` + string(state) + `">.*?</tr>`).FindString(body)
		require.NotEmpty(t, row, state)
		require.Regexp(t, fmt.Sprintf(`class="num events"><a [^>]*>%d</a>`, want[0]), row, state)
		if want[1] < 0 { // a task is never ignored: no count and no link, as otel has no series
			require.Contains(t, row, `class="num tasks">—</td>`, state)
			continue
		}
		require.Regexp(t, fmt.Sprintf(`class="num tasks"><a [^>]*>%d</a>`, want[1]), row, state)
	}
	contains(t, body, `id="events-total">25<`)
	contains(t, body, `id="tasks-total">2<`)
	contains(t, body, `id="dead-total">22<`)
	_, dead, ok := strings.Cut(body, `<h2 id="dead">`)
	require.True(t, ok)
	require.Equal(t, 20, strings.Count(dead, `<tr data-id=`), "the overview lists 20 dead letters")
	contains(t, dead, `<a href="events?state=dead_letter">All 22 dead-lettered</a>`)

	status, body := f.get(t, "events?state=dead_letter&limit=5")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, 5, strings.Count(body, `<tr data-id=`))
	contains(t, body, `id="next-page">Next 5</a>`)
	status, _ = f.get(t, "events?limit=1000")
	require.Equal(t, http.StatusOK, status)
	for _, limit := range []string{"0", "1001", "100000000", "-1", "x"} {
		status, body := f.get(t, "events?limit="+limit)
		require.Equal(t, http.StatusBadRequest, status, limit)
		contains(t, body, "The limit must be a number from 1 to 1000.", limit)
	}
}

// TestSearchSaysWhenThereMayBeMore: a search shows at most 100 records of
// an object, and then says that there may be more, with a link to the list
// of the object's records.
func TestSearchSaysWhenThereMayBeMore(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	_, body := f.get(t, "search?q=in_paid_1")
	notContains(t, body, `id="more-records"`)
	notContains(t, body, `id="more-claims"`)

	f.failing.Store(false)
	for i := range 100 {
		f.deliver(t, "invoice.paid", fmt.Sprintf("evt_busy_%03d", i), "in_busy")
	}
	f.work(t)
	_, body = f.get(t, "search?q=in_busy")
	_, records, _ := strings.Cut(body, "Inbox records of object")
	records, claims, _ := strings.Cut(records, "Ledger records of object")
	require.Equal(t, 100, strings.Count(records, `<tr data-id="evt_busy_`))
	require.Equal(t, 100, strings.Count(claims, `<a href="event?id=evt_busy_`))
	contains(t, body, `id="more-records">Showing the newest 100; there may be more: <a href="events?object=in_busy&amp;limit=1000">`)
	contains(t, body, `id="more-claims"`)
}

// TestRunbookSteps follows the dashboard steps of README's "Operating it"
// by the names it gives: Failed → "Redrive every failed event and task";
// Dead letters, filtered by type and time received → "Redrive every
// dead_letter event and task of type ... received since ..."; an event's
// page → Forget → Forget the event.
func TestRunbookSteps(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	doc := strings.Join(strings.Fields(string(readme)), " ")
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true, AllowForget: true})
	// An inbox that retries: a failure leaves the event failed.
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[json.RawMessage]) error {
		return errors.New("downstream is down")
	})
	retrying, err := idempotency.NewInbox(f.store, hs, idempotency.InboxConfig{MaxAttempts: 5, Now: f.clock.Now, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	f.deliver(t, "invoice.paid", "evt_failing", "in_failing")
	_, err = retrying.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, idempotency.InboxFailed, f.state(t, "evt_failing"))

	// follow returns the page the link or button named name leads to.
	link := regexp.MustCompile(`<a href="([^"]+)">([^<]+)</a>`)
	follow := func(body, name string) string {
		t.Helper()
		for _, m := range link.FindAllStringSubmatch(body, -1) {
			if m[2] == name {
				_, page := f.get(t, html.UnescapeString(m[1]))
				return page
			}
		}
		t.Fatalf("no link %q", name)
		return ""
	}
	button := func(body, name string) url.Values {
		t.Helper()
		re := regexp.MustCompile(`(?s)<form[^>]*method="post" action="(\w+)">\s*((?:<input[^>]*>\s*)*)<button[^>]*>` + regexp.QuoteMeta(name) + `</button>`)
		m := re.FindStringSubmatch(body)
		require.NotNil(t, m, "no button %q", name)
		form := url.Values{"action": {m[1]}}
		for _, in := range regexp.MustCompile(`name="(\w+)" value="([^"]*)"`).FindAllStringSubmatch(m[2], -1) {
			form.Set(in[1], html.UnescapeString(in[2]))
		}
		return form
	}
	press := func(form url.Values) {
		t.Helper()
		action := form.Get("action")
		form.Del("action")
		resp := f.post(t, action, form.Encode(), nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	}

	_, overview := f.get(t, "")
	require.Contains(t, doc, "the dashboard's *Oldest still to be applied* grows")
	require.Contains(t, overview, ">Oldest still to be applied<")
	require.Contains(t, doc, "(dashboard: *Failed* → *Redrive every failed event and task*)")
	press(button(follow(overview, "Failed"), "Redrive every failed event and task"))
	require.Equal(t, idempotency.InboxPending, f.state(t, "evt_failing"))

	require.Contains(t, doc, "Dashboard: *Dead letters*, *Type* `charge.failed`, *Received since* the date 8 days back (`2026-11-26`), *Filter* → *Redrive every dead_letter event and task of type charge.failed received since 2026-11-26*")
	// A dead letter received after evt_dead_1: the time range takes it
	// alone.
	since := f.clock.Now().UTC().Format("2006-01-02T15:04")
	f.clock.Advance(time.Minute)
	f.failing.Store(true)
	f.deliver(t, "invoice.paid", "evt_dead_later", "in_dead_later")
	f.work(t)
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, "evt_dead_later"))
	// The page's filter form as a browser submits it: each input's value,
	// each select's selected option; Type and Received since filled in.
	deadLetters := follow(overview, "Dead letters")
	m := regexp.MustCompile(`(?s)<form class="filters" method="get" action="(\w+)">(.*?)</form>`).FindStringSubmatch(deadLetters)
	require.NotNil(t, m, "no filter form")
	filter := url.Values{}
	for _, in := range regexp.MustCompile(`<input name="(\w+)" value="([^"]*)"`).FindAllStringSubmatch(m[2], -1) {
		filter.Set(in[1], html.UnescapeString(in[2]))
	}
	for _, sel := range regexp.MustCompile(`(?s)<select name="(\w+)">(.*?)</select>`).FindAllStringSubmatch(m[2], -1) {
		filter.Set(sel[1], "")
		if o := regexp.MustCompile(`<option value="([^"]*)" selected>`).FindStringSubmatch(sel[2]); o != nil {
			filter.Set(sel[1], html.UnescapeString(o[1]))
		}
	}
	require.Contains(t, filter, "type", "the filter form has a Type")
	require.Contains(t, filter, "since", "the filter form has a Received since")
	filter.Set("type", "invoice.paid")
	filter.Set("since", since)
	_, ofType := f.get(t, m[1]+"?"+filter.Encode())
	press(button(ofType, "Redrive every dead_letter event and task of type invoice.paid received since "+since))
	require.Equal(t, idempotency.InboxPending, f.state(t, "evt_dead_later"))
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, "evt_dead_1"), "received before the time range")

	require.Contains(t, doc, "(dashboard: the event's page → *Forget* → *Forget the event*)")
	_, page := f.get(t, "event?id=evt_paid_1")
	m = regexp.MustCompile(`<form[^>]*method="get" action="(\w+)"><input type="hidden" name="id" value="([^"]*)"><button[^>]*>Forget</button>`).FindStringSubmatch(page)
	require.NotNil(t, m, "no button Forget")
	_, confirm := f.get(t, m[1]+"?id="+url.QueryEscape(html.UnescapeString(m[2])))
	press(button(confirm, "Forget the event"))
	_, claimed, err := f.store.LookupEvent(t.Context(), "evt_paid_1")
	require.NoError(t, err)
	require.False(t, claimed, "forgotten")
}

// TestForgetRefusesTasks: the event page offers no forget for a task, and
// a POST of one is refused too, its record kept: a task's row is what makes
// it run once per key.
func TestForgetRefusesTasks(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowForget: true})
	const task = "task:send-receipt:in_paid_1"
	_, body := f.get(t, "event?id="+task)
	notContains(t, body, `action="forget"`)
	resp := f.post(t, "forget", "confirm=yes&id="+task, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "./event?id="+url.QueryEscape(task)+"&msg=forget-task", resp.Header.Get("Location"))
	require.Equal(t, idempotency.InboxProcessed, f.state(t, task))
	_, body = f.get(t, "event?id="+task+"&msg=forget-task")
	contains(t, body, "Not forgotten: this is a task")
}

// TestOverviewLastAttempt: the overview dates the newest attempt, "2m 0s
// ago" (an age, not how long it took), "none" before any, so that an operator who sees events pending tells workers
// that fall behind from workers that do not run.
func TestOverviewLastAttempt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, idempotency.NewMemoryStore(), dashboard.Config{})
	f.deliver(t, "invoice.paid", "evt_last_1", "in_last_1")
	_, body := f.get(t, "")
	contains(t, body, `id="last-attempt">none<`, "nothing attempted yet")

	f.work(t)
	f.clock.Advance(2 * time.Minute)
	f.deliver(t, "invoice.paid", "evt_last_2", "in_last_2")
	_, body = f.get(t, "")
	contains(t, body, `id="last-attempt">2m 0s <small>ago</small><`, "the first event's and its task's attempt")
	contains(t, body, `id="oldest-pending">0s<`, "the second event waits")
}
