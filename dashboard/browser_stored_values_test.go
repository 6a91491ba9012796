package dashboard_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestBrowserStoredValuesInert: the values a sender controls and the
// store keeps (an object id, an account, a last error that quotes them, a
// task's key) are shown as text on every page that shows them, in its
// title too: no element, script or link of theirs in the page the browser
// builds, and every link stays on the dashboard's origin.
func TestBrowserStoredValuesInert(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, idempotency.NewMemoryStore(), dashboard.Config{AllowRedrive: true, AllowForget: true})
	const evil = `javascript:alert(1)//"><img src=x id=injected onerror=alert(1)><script>document.title='pwned'</script>`
	deliverAs := func(eventID string) {
		t.Helper()
		raw, err := os.ReadFile("../testdata/stripe-events/invoice.paid.json")
		require.NoError(t, err)
		var ev map[string]any
		require.NoError(t, json.Unmarshal(raw, &ev))
		ev["id"], ev["account"] = eventID, "acct_"+evil
		ev["data"].(map[string]any)["object"].(map[string]any)["id"] = evil
		payload, err := json.Marshal(ev)
		require.NoError(t, err)
		ans := idempotencytest.Deliver(f.webhook, payload, secret)
		require.Equal(t, http.StatusOK, ans.Status, ans.Body)
	}
	deliverAs("evt_applied") // its receipt task's key is the object id
	f.work(t)
	f.failing.Store(true)
	deliverAs("evt_evil") // dead-lettered, its last error quoting the object id
	f.work(t)
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, "evt_evil"))

	base := f.srv.URL + mount
	for _, page := range []string{"", "events?state=dead_letter", "events?kind=task", "event?id=evt_evil",
		"event?id=" + url.QueryEscape("task:send-receipt:"+evil), "search?q=" + url.QueryEscape(evil),
		"events?object=" + url.QueryEscape(evil), "events?account=" + url.QueryEscape("acct_"+evil)} {
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+page), chromedp.WaitVisible(chromedp.CSS("main h1"))), page)
		injected, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#injected, img, script").length`))
		require.NoError(t, err)
		require.Zero(t, injected, "%s: an element of a stored value", page)
		offsite, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
			`[...document.querySelectorAll("a[href], form[action]")].map(e => e.href || e.action).filter(u => !u.startsWith(location.origin + "/"))`))
		require.NoError(t, err)
		require.Empty(t, offsite, "%s: links off the dashboard", page)
		title, err := chromedp.Run(ctx, chromedp.Title())
		require.NoError(t, err)
		require.Equal(t, text(t, ctx, "main h1")+" · Stripe webhooks", title, "%s: the title is the heading, as text", page)
		body, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		require.NoError(t, err)
		require.Contains(t, body, evil, "%s: the value, as text", page)
	}
}
