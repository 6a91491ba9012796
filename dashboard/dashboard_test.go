package dashboard_test

import (
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

func memoryFixture(t *testing.T, cfg dashboard.Config) *fixture {
	t.Helper()
	f := newFixture(t, idempotency.NewMemoryStore(), cfg)
	f.populate(t)
	return f
}

func TestNewNeedsAnInbox(t *testing.T) {
	t.Parallel()
	_, err := dashboard.New(dashboard.Config{})
	require.ErrorContains(t, err, "Config.Inbox")
}

func TestPages(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})

	status, body := f.get(t, "")
	require.Equal(t, http.StatusOK, status)
	contains(t, body, `id="oldest-pending">4m 0s<`)
	contains(t, body, `id="last-attempt">5m 30s <small>ago</small><`, "the dead letter's attempt, before the 90 s and the 4 min the fixture waited")
	contains(t, body, "evt_dead_1")
	contains(t, body, "ledger service refused invoice in_dead_1")
	notContains(t, body, "evt_paid_1", "the overview lists failed and dead-lettered records only")

	status, body = f.get(t, "events?kind=task&state=processed")
	require.Equal(t, http.StatusOK, status)
	contains(t, body, "task:send-receipt:in_paid_1")
	contains(t, body, "task:send-receipt:in_paid_2")
	notContains(t, body, `href="event?id=evt_paid_1"`)
	contains(t, body, "<h1>Processed tasks</h1>")

	status, body = f.get(t, "event?id=evt_dead_1")
	require.Equal(t, http.StatusOK, status)
	contains(t, body, `id="state">dead_letter<`)
	contains(t, body, `id="attempts">1<`)
	contains(t, body, `id="no-claim"`, "a dead-lettered event has no claim")

	status, body = f.get(t, "event?id=task:send-receipt:in_paid_1")
	require.Equal(t, http.StatusOK, status)
	contains(t, body, `id="state">processed<`)
	notContains(t, body, "<h2>Ledger</h2>", "a task has no claim")
	contains(t, body, `<dt>Name</dt><dd>send-receipt</dd>`)
	contains(t, body, `<dt>Key</dt><dd class="id" id="task-key">in_paid_1</dd>`)
	contains(t, body, `<dt>Enqueued</dt>`)
	for _, field := range []string{"Type", "Object", "Account", "Livemode", "API version", "Created"} {
		notContains(t, body, "<dt>"+field+"</dt>", "a task has a name and a key, not an event's fields")
	}

	status, body = f.get(t, "event?id=evt_refund_1")
	require.Equal(t, http.StatusOK, status)
	contains(t, body, `id="outcome">skipped<`)
	contains(t, body, "refunds are booked by hand")

	status, body = f.get(t, "event?id=evt_nope")
	require.Equal(t, http.StatusNotFound, status)
	// Why that may be, as idemctl show says it.
	contains(t, body, `id="not-found">No event or task with this id in the inbox or the ledger: it did not reach this store, `+
		`or its delivery failed, which stores nothing (answered 5xx: in synchronous mode a handler&#39;s error, and Stripe sends it again), `+
		`or it was answered ignored (a type without a handler, stored only with Config.RecordIgnored), `+
		`or its claim was pruned (kept Retention.EventIDs, 45 days by default).</p>`)

	// Search by object id finds the event (a task has no object); by event
	// id, the event.
	status, body = f.get(t, "search?q=in_paid_2")
	require.Equal(t, http.StatusOK, status)
	contains(t, body, `href="event?id=evt_paid_2"`)
	status, body = f.get(t, "search?q=evt_refund_1")
	require.Equal(t, http.StatusOK, status)
	contains(t, body, `id="found-event"`)

	status, _ = f.get(t, "events?state=bogus")
	require.Equal(t, http.StatusBadRequest, status)
	status, _ = f.get(t, "events?limit=0")
	require.Equal(t, http.StatusBadRequest, status)
	status, _ = f.get(t, "nowhere")
	require.Equal(t, http.StatusNotFound, status)

	resp := f.post(t, "", "", nil)
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
}

func TestPagesForbidFramingAndCaching(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	for _, path := range []string{"", "events", "nowhere"} {
		resp := f.post(t, path, "", nil)
		require.Contains(t, resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'", path)
		require.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'none'", path)
		require.Equal(t, "no-store", resp.Header.Get("Cache-Control"), path)
	}
}

// TestMountedAnywhere: the dashboard serves the same pages with the
// prefix stripped with or without its slash, and its links are relative.
func TestMountedAnywhere(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	dash, err := dashboard.New(dashboard.Config{Inbox: f.inbox})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/a/", http.StripPrefix("/a/", dash))
	mux.Handle("/b/c/", http.StripPrefix("/b/c", dash))
	mux.Handle("/d", http.StripPrefix("/d", dash)) // a router that sends the root without its slash
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	resp, err := noRedirects.Get(srv.URL + "/d")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusMovedPermanently, resp.StatusCode)
	require.Equal(t, "d/", resp.Header.Get("Location"))
	for _, prefix := range []string{"/a/", "/b/c/"} {
		for _, path := range []string{"", "events?state=dead_letter", "event?id=evt_dead_1", "search?q=in_paid_1"} {
			resp, err := plainClient.Get(srv.URL + prefix + path)
			require.NoError(t, err)
			body := readAll(t, resp)
			require.Equal(t, http.StatusOK, resp.StatusCode, prefix+path)
			notContains(t, body, `href="/`, "links are relative")
			notContains(t, body, `action="/`, "forms are relative")
		}
	}
}

func TestPayloadsHiddenByDefault(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	_, body := f.get(t, "event?id=evt_paid_1")
	contains(t, body, `id="payload-hidden"`)
	notContains(t, body, customerEmail)

	f = memoryFixture(t, dashboard.Config{ShowPayloads: true})
	_, body = f.get(t, "event?id=evt_paid_1")
	notContains(t, body, `id="payload-hidden"`)
	contains(t, body, `id="payload"`)
	contains(t, body, customerEmail)
	contains(t, body, "\n  &#34;id&#34;: &#34;evt_paid_1&#34;", "indented JSON")
}

// TestEscaping: a payload's strings reach the page as text, never markup.
func TestEscaping(t *testing.T) {
	t.Parallel()
	f := newFixture(t, idempotency.NewMemoryStore(), dashboard.Config{AllowRedrive: true})
	f.failing.Store(true)
	const evil = `in_"><script>alert(1)</script>`
	f.deliver(t, "invoice.paid", "evt_evil", evil)
	f.work(t)
	for _, path := range []string{"", "event?id=evt_evil", "search?q=" + url.QueryEscape(evil), "events?object=" + url.QueryEscape(evil)} {
		_, body := f.get(t, path)
		notContains(t, body, "<script>", path)
		contains(t, body, html.EscapeString(evil)[:20], path)
	}
}

func TestActionsOffByDefault(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	for _, path := range []string{"", "events?state=dead_letter", "event?id=evt_dead_1", "event?id=evt_paid_1"} {
		_, body := f.get(t, path)
		notContains(t, body, `action="redrive"`, path)
		notContains(t, body, `action="forget"`, path)
	}
	for _, action := range []string{"redrive", "forget"} {
		resp := f.post(t, action, "confirm=yes&id=evt_dead_1", nil)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, action)
	}
	status, _ := f.get(t, "forget?id=evt_paid_1")
	require.Equal(t, http.StatusForbidden, status, "forget's confirmation page")
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, "evt_dead_1"))
}

// TestActionsArePostOnly: an action is taken by POST only; a GET of
// forget is its confirmation page, which takes nothing.
func TestActionsArePostOnly(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true, AllowForget: true})
	for _, action := range []string{"redrive", "forget"} {
		for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete} {
			req, err := http.NewRequest(method, f.srv.URL+mount+action+"?id=evt_paid_1", nil)
			require.NoError(t, err)
			resp := f.do(t, req)
			if action == "forget" && (method == http.MethodGet || method == http.MethodHead) {
				require.Equal(t, http.StatusOK, resp.StatusCode, method+" "+action)
				continue
			}
			require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, method+" "+action)
			require.Equal(t, map[string]string{"redrive": "POST", "forget": "GET, HEAD, POST"}[action], resp.Header.Get("Allow"))
		}
	}
	require.Equal(t, idempotency.InboxProcessed, f.state(t, "evt_paid_1"))
	_, claimed, err := f.store.LookupEvent(t.Context(), "evt_paid_1")
	require.NoError(t, err)
	require.True(t, claimed, "not forgotten")
}

// TestCrossOriginActionsRefused: another site cannot make an operator's
// browser redrive or forget.
func TestCrossOriginActionsRefused(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true, AllowForget: true})
	for name, h := range map[string]http.Header{
		"Sec-Fetch-Site cross-site": {"Sec-Fetch-Site": {"cross-site"}},
		"Sec-Fetch-Site same-site":  {"Sec-Fetch-Site": {"same-site"}},
		"foreign Origin":            {"Sec-Fetch-Site": nil, "Origin": {"https://evil.example"}},
	} {
		for _, action := range []string{"redrive", "forget"} {
			for _, id := range []string{"evt_dead_1", "evt_paid_1"} {
				resp := f.post(t, action, "id="+id, h)
				require.Equal(t, http.StatusForbidden, resp.StatusCode, name+" "+action)
				contains(t, resp.body, "Nothing was changed")
			}
		}
	}
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, "evt_dead_1"))
	require.Equal(t, idempotency.InboxProcessed, f.state(t, "evt_paid_1"))
	_, claimed, err := f.store.LookupEvent(t.Context(), "evt_paid_1")
	require.NoError(t, err)
	require.True(t, claimed, "not forgotten")
	require.Contains(t, f.logs(t), "cross-origin action refused")

	// The same request from the dashboard's own page goes through.
	resp := f.post(t, "redrive", "id=evt_dead_1", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, idempotency.InboxPending, f.state(t, "evt_dead_1"))
}

// TestRedrive: one event from its page, and every dead-lettered event of
// a list; each redirects back to the page with a message.
func TestRedrive(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true})
	_, body := f.get(t, "event?id=evt_dead_1")
	contains(t, body, `action="redrive"`)

	resp := f.post(t, "redrive", "id=evt_dead_1", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "./event?id=evt_dead_1&msg=redriven&n=1", resp.Header.Get("Location"))
	require.Equal(t, idempotency.InboxPending, f.state(t, "evt_dead_1"))
	_, body = f.get(t, "event?id=evt_dead_1&msg=redriven&n=1")
	contains(t, body, "Redrove 1 event")
	notContains(t, body, `action="redrive"`, "a pending event has nothing to redrive")

	// A second dead letter, then the list's bulk redrive.
	f.work(t)
	f.deliver(t, "invoice.paid", "evt_dead_2", "in_dead_2")
	f.work(t)
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, "evt_dead_1"))
	_, body = f.get(t, "events?kind=event&state=dead_letter")
	contains(t, body, `id="redrive-all"`)
	resp = f.post(t, "redrive", "kind=event&state=dead_letter&type=", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "./events?kind=event&msg=redriven&n=3&state=dead_letter", resp.Header.Get("Location"))
	for _, id := range []string{"evt_dead_1", "evt_dead_2", "evt_waiting"} {
		require.Equal(t, idempotency.InboxPending, f.state(t, id), id)
	}
	require.Contains(t, f.logs(t), "dashboard: redrove")

	resp = f.post(t, "redrive", "state=processed", nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "processed events are not redriven")
}

// TestFlashIsFixedText: a crafted link cannot put words on the page.
func TestFlashIsFixedText(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	_, body := f.get(t, "?msg=Your+account+is+locked")
	notContains(t, body, "Your account is locked")
	notContains(t, body, `id="flash"`)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// contains and notContains check a page for a string, and on failure
// print the string, not the page.
func contains(t *testing.T, page, want string, msg ...any) {
	t.Helper()
	if !strings.Contains(page, want) {
		t.Fatalf("page lacks %q %v", want, msg)
	}
}

func notContains(t *testing.T, page, unwanted string, msg ...any) {
	t.Helper()
	if strings.Contains(page, unwanted) {
		t.Fatalf("page has %q %v", unwanted, msg)
	}
}

// TestStoreErrorsAreGeneric: when PostgreSQL fails, the page says so in a
// fixed sentence, and the error itself goes to the log only.
func TestStoreErrorsAreGeneric(t *testing.T) {
	t.Parallel()
	db := idempotencytest.Postgres(t)
	f := newFixture(t, db.NewStore(t, idempotency.PgxConfig{}), dashboard.Config{AllowRedrive: true, AllowForget: true})
	f.populate(t)
	status, body := f.get(t, "event?id=evt_dead_1")
	require.Equal(t, http.StatusOK, status)
	contains(t, body, `id="state">dead_letter<`)

	db.Pool.Close()
	for _, path := range []string{"", "events?state=failed", "event?id=evt_dead_1", "search?q=in_dead_1"} {
		status, body := f.get(t, path)
		require.Equal(t, http.StatusServiceUnavailable, status, path)
		contains(t, body, "could not be read or changed just now", path)
		notContains(t, body, "closed pool", path)
	}
	for _, action := range []string{"redrive", "forget"} {
		resp := f.post(t, action, "confirm=yes&id=evt_dead_1", nil)
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, action)
		notContains(t, resp.body, "closed pool", action)
	}
	logs := f.logs(t)
	require.Contains(t, logs, "closed pool", "the log has the error")
	require.Contains(t, logs, "dashboard: reading inbox stats")
}

// TestForget: a finished event is forgotten, once confirmed, and its next
// delivery is stored and applied as new; an event still to be applied is
// refused. A forget not confirmed is sent to its confirmation page.
func TestForget(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowForget: true})
	_, body := f.get(t, "event?id=evt_paid_1")
	contains(t, body, `action="forget"`)
	_, body = f.get(t, "event?id=evt_waiting")
	notContains(t, body, `action="forget"`, "a pending event cannot be forgotten")
	resp := f.post(t, "forget", "id=evt_paid_1", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "./forget?id=evt_paid_1", resp.Header.Get("Location"), "not confirmed: its confirmation page")
	require.Equal(t, idempotency.InboxProcessed, f.state(t, "evt_paid_1"))
	status, body := f.get(t, "forget?id=")
	require.Equal(t, http.StatusBadRequest, status)
	contains(t, body, "Give an event id")

	resp = f.post(t, "forget", "confirm=yes&id=evt_waiting", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "./event?id=evt_waiting&msg=forget-unfinished", resp.Header.Get("Location"))
	require.Equal(t, idempotency.InboxPending, f.state(t, "evt_waiting"))
	resp = f.post(t, "forget", "confirm=yes&id=evt_nope", nil)
	require.Equal(t, "./event?id=evt_nope&msg=forget-none", resp.Header.Get("Location"))

	resp = f.post(t, "forget", "confirm=yes&id=evt_paid_1", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "./event?id=evt_paid_1&msg=forgotten", resp.Header.Get("Location"))
	_, claimed, err := f.store.LookupEvent(t.Context(), "evt_paid_1")
	require.NoError(t, err)
	require.False(t, claimed)
	_, inInbox, err := f.inbox.Lookup(t.Context(), "evt_paid_1")
	require.NoError(t, err)
	require.False(t, inInbox)
	status, body = f.get(t, "event?id=evt_paid_1&msg=forgotten")
	require.Equal(t, http.StatusNotFound, status)
	contains(t, body, "Forgot the event")

	f.failing.Store(false)
	f.deliver(t, "invoice.paid", "evt_paid_1", "in_paid_1") // queued again, not a duplicate
	f.work(t)
	require.Equal(t, idempotency.InboxProcessed, f.state(t, "evt_paid_1"))
}

// An id, a type or an object the inbox refuses (a NUL byte, invalid
// UTF-8: a typo or a crafted link) is the request's fault: 400 Bad input,
// and nothing logged as an error. It was 503 Store unavailable, logged as
// an outage.
func TestMalformedInputIsABadRequest(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true, AllowForget: true})
	for _, path := range []string{"search?q=%00", "search?q=%FF", "events?type=%FF", "events?object=%00"} {
		status, body := f.get(t, path)
		require.Equal(t, http.StatusBadRequest, status, path)
		require.Contains(t, body, "Bad input", path)
	}
	resp := f.post(t, "redrive", "id=%FF", nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.NotContains(t, f.logs(t), "level=ERROR")
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, "evt_dead_1"), "nothing redriven")
}

// A redrive that moves nothing (the event left dead letter since the page
// was shown) says so, instead of "they are pending".
func TestRedriveOfEventNoLongerDeadLettered(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true})
	f.failing.Store(false)
	n, err := f.inbox.Redrive(t.Context(), idempotency.RedriveFilter{EventIDs: []string{"evt_dead_1"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	f.work(t)
	require.Equal(t, idempotency.InboxProcessed, f.state(t, "evt_dead_1"))

	resp := f.post(t, "redrive", "id=evt_dead_1", nil) // the stale page's button
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body := f.get(t, resp.Header.Get("Location")[2:])
	require.Contains(t, body, "Nothing redriven")
	notContains(t, body, "pending, with a fresh attempt budget", "nothing was redriven")
}

// TestBulkRedriveCount: the list's bulk redrive says how many records it
// would move now, counted by a dry run of the same filter (events and
// tasks apart), beyond the page the list shows; the redrive then moves
// that many. A list the bulk redrive is not offered on counts nothing.
func TestBulkRedriveCount(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true})
	// evt_waiting is applied, and its receipt task dead-lettered, then
	// two more events are.
	f.failing.Store(false)
	f.failingTasks.Store(true)
	f.work(t)
	f.failing.Store(true)
	f.deliver(t, "invoice.paid", "evt_count_2", "in_count_2")
	f.deliver(t, "invoice.paid", "evt_count_3", "in_count_3")
	f.work(t)
	st, err := f.inbox.Stats(t.Context())
	require.NoError(t, err)
	require.Equal(t, 3, st.Events(idempotency.InboxDeadLetter), "evt_dead_1, evt_count_2 and evt_count_3")
	require.Equal(t, 1, st.TaskCounts[idempotency.InboxDeadLetter], "evt_waiting's receipt")

	_, body := f.get(t, "events?state=dead_letter&limit=1")
	require.Equal(t, 1, strings.Count(body, `<tr data-id=`), "a page of one")
	contains(t, body, `id="redrive-all-count">3 events and 1 task to redrive now<`)
	_, body = f.get(t, "events?kind=task&state=dead_letter")
	contains(t, body, `id="redrive-all-count">1 task to redrive now<`)
	_, body = f.get(t, "events?kind=event&state=dead_letter&object=in_count_2")
	contains(t, body, `id="redrive-all-count">1 event to redrive now<`)
	_, body = f.get(t, "events?state=processed")
	notContains(t, body, `id="redrive-all-count"`, "no bulk redrive of processed records")

	resp := f.post(t, "redrive", "state=dead_letter", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "./events?events=3&msg=redriven-records&state=dead_letter&tasks=1", resp.Header.Get("Location"))
}
