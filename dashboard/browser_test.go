package dashboard_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/ci"
)

// envScreenshots names a directory the browser tests write their
// screenshots to (docs/dashboard-*.png come from there).
const envScreenshots = "DASHBOARD_SCREENSHOTS"

// browser opens a tab for the test in the headless Chromium (Debian's
// package chromium) the package's browser tests share, in a browser
// context of its own (cookies and storage apart from other tests'), at
// 1280×900, and returns its context, which ends with the test. Without
// the browser the test is skipped, and with CI=true it fails.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		const msg = "no Chromium for the browser tests: install Debian's package (apt-get install chromium)"
		if ci.On() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	chrome.once.Do(func() { chrome.ctx, chrome.stop, chrome.err = startChromium(path) })
	require.NoError(t, chrome.err, "starting Chromium")
	ctx, cancelTab := chromedp.NewContext(chrome.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancelTab)
	// The tab's timeout bounds the rest of the test, a guard against a
	// hang: the first test on PostgreSQL starts the cluster under it (45
	// s on a busy machine, where TestBrowserListPages took 74 s in all),
	// and a test loads a dozen pages.
	ctx, cancelTimeout := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(cancelTimeout)
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)), "opening a tab")
	return ctx
}

// chrome is the Chromium the browser tests share: starting one took about
// two seconds of CPU, for each test. The first test that needs it starts
// it; TestMain stops it.
var chrome struct {
	once sync.Once
	ctx  context.Context // of its first tab, which lives as long as the browser
	stop func()          // closes the browser and removes its profile
	err  error
}

// startChromium starts the headless Chromium at path, and returns the
// context of its first tab and the func that stops it.
func startChromium(path string) (context.Context, func(), error) {
	// This machine's network is closed: without these flags Chromium
	// waits on the network at start.
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		// No UserDataDir of ours: chromedp makes its own, and at the end
		// kills Chromium's child processes that outlive it and removes
		// it, trying again while they still write; a t.TempDir's removal
		// failed a test ("directory not empty") when a child still wrote
		// there on a loaded machine.
		chromedp.WindowSize(1280, 900),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(allocCtx)
	stop := func() {
		// Closed rather than killed, Chromium removes the directory of
		// its singleton socket from /tmp.
		closing, cancel := context.WithTimeout(ctx, 10*time.Second)
		_ = chromedp.Cancel(closing)
		cancel()
		cancelBrowser()
		cancelAlloc()
	}
	// The first action starts the browser, which lives as long as ctx.
	if err := chromedp.Do(ctx); err != nil {
		stop()
		return nil, nil, err
	}
	return ctx, stop, nil
}

// stopChromium stops the shared Chromium, if a test started it.
func stopChromium() {
	if chrome.stop != nil {
		chrome.stop()
	}
}

// screenshot writes the whole page to $DASHBOARD_SCREENSHOTS/name.png when
// that is set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv(envScreenshots)
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

// text reads the text of the element sel.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(t, err, sel)
	return strings.TrimSpace(s)
}

// attrs reads the attribute name of every element sel matches, none
// when it matches none.
func attrs(t *testing.T, ctx context.Context, sel, name string) []string {
	t.Helper()
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(sel), chromedp.AtLeast(0)))
	require.NoError(t, err, sel)
	var vs []string
	for _, n := range nodes {
		vs = append(vs, n.AttributeValue(name))
	}
	return vs
}

// cardTops reads the top of each of the overview's cards, in pixels.
func cardTops(t *testing.T, ctx context.Context) []float64 {
	t.Helper()
	tops, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`Array.from(document.querySelectorAll(".cards .card"), c => c.getBoundingClientRect().top)`))
	require.NoError(t, err)
	return tops
}

func ids(recs []idempotency.InboxRecord) []string {
	var s []string
	for _, r := range recs {
		s = append(s, r.EventID)
	}
	return s
}

// TestBrowser drives the dashboard in Chromium, served over loopback from
// a real PostgreSQL: what it shows is what the inbox holds, its first Tab
// stop skips to the content, its redrive
// button brings a dead-lettered event back, and the bulk redrive of a list
// filtered by a connected account brings back that account's.
func TestBrowser(t *testing.T) {
	ctx := browser(t)
	db := idempotencytest.Postgres(t)
	f := newFixture(t, db.NewStore(t, idempotency.PgxConfig{}), dashboard.Config{AllowRedrive: true, AllowForget: true})
	f.populate(t)
	base := f.srv.URL + mount

	// The overview: every count is the inbox's.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#counts"))))
	st, err := f.inbox.Stats(t.Context())
	require.NoError(t, err)
	events, tasks := 0, 0
	for s, n := range st.Counts {
		row := `#counts tr[data-state="` + string(s) + `"] `
		require.Equal(t, strconv.Itoa(n-st.TaskCounts[s]), text(t, ctx, row+"td.events"), "events %s", s)
		wantTasks := strconv.Itoa(st.TaskCounts[s])
		if s == idempotency.InboxIgnored {
			wantTasks = "—" // a task is never ignored: no count
		}
		require.Equal(t, wantTasks, text(t, ctx, row+"td.tasks"), "tasks %s", s)
		events, tasks = events+n-st.TaskCounts[s], tasks+st.TaskCounts[s]
	}
	require.Equal(t, strconv.Itoa(events), text(t, ctx, "#events-total"))
	require.Equal(t, strconv.Itoa(tasks), text(t, ctx, "#tasks-total"))
	require.Equal(t, 2, st.TaskCounts[idempotency.InboxProcessed], "the fixture's receipts")
	require.Equal(t, "4m 0s", text(t, ctx, "#oldest-pending"))
	require.Equal(t, "5m 30s ago", text(t, ctx, "#last-attempt"))
	// Its six cards fit in one row at 1280 pixels, and wrap on a narrow
	// screen.
	tops := cardTops(t, ctx)
	require.Len(t, tops, 6)
	for i, top := range tops {
		require.Equal(t, tops[0], top, "card %d's top, at 1280 px wide: %v", i+1, tops)
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(480, 900)))
	narrow := cardTops(t, ctx)
	// Back at 1280 pixels, for the rest and the screenshots (EmulateReset
	// leaves headless Chromium at 480).
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)))
	require.Less(t, narrow[0], narrow[len(narrow)-1], "at 480 px wide the cards wrap: %v", narrow)
	require.Equal(t, tops, cardTops(t, ctx), "the cards in one row again")

	// Its dead-letter list is the inbox's, with the last error.
	dead, err := f.inbox.List(t.Context(), idempotency.InboxFilter{States: []idempotency.InboxState{idempotency.InboxDeadLetter}})
	require.NoError(t, err)
	require.Equal(t, []string{"evt_dead_1"}, ids(dead))
	require.Equal(t, ids(dead), attrs(t, ctx, `h2#dead + .scroll table tr[data-id]`, "data-id"))
	require.Equal(t, dead[0].LastError, text(t, ctx, `h2#dead + .scroll table tr[data-id="evt_dead_1"] td.err`))
	require.Contains(t, dead[0].LastError, "ledger service refused invoice in_dead_1")
	screenshot(t, ctx, "dashboard-overview")

	// The keyboard: the first Tab stop is "Skip to content", shown once
	// focused, which moves the focus to the page's content, past the
	// header's seven stops; the next Tab is the content's first link.
	focused := func() string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(e => e.tagName + "#" + e.id + " " + e.textContent.trim().slice(0, 20))(document.activeElement)`))
		require.NoError(t, err)
		return s
	}
	inView := func(sel string) bool {
		t.Helper()
		in, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(e => { const r = e && e.getBoundingClientRect(); return !!e && r.top >= 0 && r.left >= 0 && r.width > 1 && r.height > 1 })(document.querySelector("`+sel+`"))`))
		require.NoError(t, err)
		return in
	}
	require.False(t, inView("#skip"), "Skip to content, before it is focused")
	require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)))
	require.Equal(t, "A#skip Skip to content", focused(), "the first Tab stop")
	require.True(t, inView("#skip"), "Skip to content, focused")
	require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent(kb.Enter)))
	require.Equal(t, "MAIN#main ", focused()[:10], "focus after Skip to content")
	require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)))
	require.Equal(t, "A#events-total "+strconv.Itoa(events), focused(), "the Tab after it")

	// A list by state and kind.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"events?kind=event&state=processed"),
		chromedp.WaitVisible(chromedp.CSS("table.records"))))
	processed, err := f.inbox.List(t.Context(), idempotency.InboxFilter{Kind: idempotency.KindEvent, States: []idempotency.InboxState{idempotency.InboxProcessed}})
	require.NoError(t, err)
	require.Len(t, processed, 2)
	require.Equal(t, ids(processed), attrs(t, ctx, `table.records tr[data-id]`, "data-id"))
	screenshot(t, ctx, "dashboard-list")

	// The dead letter's page, reached by clicking it on the overview.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base),
		chromedp.Click(chromedp.CSS(`h2#dead + .scroll table tr[data-id="evt_dead_1"] a`)),
		chromedp.WaitVisible(chromedp.CSS("#record"))))
	require.Equal(t, "dead_letter", text(t, ctx, "#state"))
	require.Equal(t, "1", text(t, ctx, "#attempts"))
	screenshot(t, ctx, "dashboard-event")

	// Fix the cause, redrive from the page, apply: processed.
	f.failing.Store(false)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("button.redrive")),
		chromedp.WaitVisible(chromedp.CSS("#flash"))))
	require.Contains(t, text(t, ctx, "#flash"), "Redrove 1 event")
	require.Equal(t, "pending", text(t, ctx, "#state"))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(loc, base+"event?id=evt_dead_1&"), loc)
	f.work(t)
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#state"))))
	require.Equal(t, "processed", text(t, ctx, "#state"))
	require.Equal(t, "processed", text(t, ctx, "#outcome"), "the ledger has its claim now")
	require.Equal(t, idempotency.InboxProcessed, f.state(t, "evt_dead_1"))

	// Search by object id from the header's box.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`header input[name="q"]`), "in_paid_2"),
		chromedp.Submit(chromedp.CSS(`header form.search`)),
		chromedp.WaitVisible(chromedp.CSS("table.records"))))
	require.Equal(t, []string{"evt_paid_2"}, attrs(t, ctx, `table.records tr[data-id]`, "data-id"))
	screenshot(t, ctx, "dashboard-search")

	// A connected account reconnected: the list of its dead letters
	// redrives them, and no other account's; a page of one says how many
	// the redrive moves, all of them.
	f.failing.Store(true)
	f.deliverOf(t, "acct_1Conn", "invoice.paid", "evt_conn_1", "in_conn_1")
	f.deliverOf(t, "acct_1Conn", "invoice.paid", "evt_conn_2", "in_conn_2")
	f.deliverOf(t, "acct_2Else", "invoice.paid", "evt_else_1", "in_else_1")
	f.work(t)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"events?state=dead_letter&account=acct_1Conn&limit=1"),
		chromedp.WaitVisible(chromedp.CSS("table.records"))))
	require.Equal(t, []string{"evt_conn_2"}, attrs(t, ctx, `table.records tr[data-id]`, "data-id"))
	require.Len(t, attrs(t, ctx, "#redrive-all", "id"), 1, "the list offers the bulk redrive")
	require.Equal(t, "Redrive every dead_letter event of account acct_1Conn", text(t, ctx, "#redrive-all"))
	require.Equal(t, "2 events to redrive now", text(t, ctx, "#redrive-all-count"), "the dry run's count, beyond the page")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#redrive-all")), chromedp.WaitVisible(chromedp.CSS("#flash"))))
	require.Contains(t, text(t, ctx, "#flash"), "Redrove 2 events")
	require.Equal(t, idempotency.InboxPending, f.state(t, "evt_conn_1"))
	require.Equal(t, idempotency.InboxPending, f.state(t, "evt_conn_2"))
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, "evt_else_1"), "another account's")
}

// TestBrowserCrossOriginFormRefused: a page on another origin that posts
// the redrive form in the operator's browser is refused, and nothing
// changes.
func TestBrowserCrossOriginFormRefused(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, idempotency.NewMemoryStore(), dashboard.Config{AllowRedrive: true})
	f.populate(t)
	// 127.0.0.1 and localhost are different origins (and sites) for the
	// browser, though one server for the test.
	evil := http.NewServeMux()
	target := f.srv.URL + mount + "redrive"
	evil.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<form method="post" action="` + target + `"><input type="hidden" name="id" value="evt_dead_1"><button id="go">Win a prize</button></form>`))
	})
	other := newLocalhostServer(t, evil)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(other),
		chromedp.Click(chromedp.CSS("#go")),
		chromedp.WaitVisible(chromedp.CSS("main h1"))))
	require.Equal(t, "Refused", text(t, ctx, "main h1"))
	require.Contains(t, text(t, ctx, "#message"), "Nothing was changed")
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, "evt_dead_1"))
}

// newLocalhostServer serves h on loopback and returns its URL with the
// host localhost: another origin than the fixture's 127.0.0.1.
func newLocalhostServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
}
