package dashboard_test

import (
	"net/url"
	"strings"
	"testing"
	"unicode"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestBrowserBidiControlsReplaced: a stored value with a bidirectional
// control (an object id with U+202E RIGHT-TO-LEFT OVERRIDE, the last
// error that quotes it) would let the browser reorder what follows it, so
// that an id reads as another; every page shows each such control as
// U+FFFD, as idemctl does, and the payload has it as a \u escape, reading
// the same. The links still carry the value as stored.
func TestBrowserBidiControlsReplaced(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, idempotency.NewMemoryStore(), dashboard.Config{AllowRedrive: true, AllowForget: true, ShowPayloads: true})
	const object = "in_\u202Egpj.exe\u2066x\u2069"
	f.failing.Store(true)
	f.deliver(t, "invoice.paid", "evt_bidi", object)
	f.work(t)
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, "evt_bidi"))

	bidi := func(s string) bool {
		return strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Bidi_Control, r) })
	}
	base := f.srv.URL + mount
	for _, page := range []string{"", "events?state=dead_letter", "event?id=evt_bidi",
		"search?q=" + url.QueryEscape(object), "events?object=" + url.QueryEscape(object)} {
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+page), chromedp.WaitVisible(chromedp.CSS("main h1"))), page)
		body, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		require.NoError(t, err)
		require.False(t, bidi(body), "%s: a bidirectional control in the page's text", page)
		require.Contains(t, body, "in_\uFFFDgpj.exe\uFFFDx\uFFFD", "%s: the object id, each control U+FFFD", page)
		title, err := chromedp.Run(ctx, chromedp.Title())
		require.NoError(t, err)
		require.False(t, bidi(title), "%s: a bidirectional control in the title", page)
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"event?id=evt_bidi"), chromedp.WaitVisible(chromedp.CSS("#payload"))))
	require.Contains(t, text(t, ctx, "#payload"), `in_\u202egpj.exe\u2066x\u2069`, "the payload, escaped")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#record a[href^="search"]`)), chromedp.WaitVisible(chromedp.CSS("table.records"))))
	require.Equal(t, []string{"evt_bidi"}, attrs(t, ctx, `table.records tr[data-id]`, "data-id"), "the object's link searches for it as stored")
}
