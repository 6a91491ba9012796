package dashboard_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestBrowserPagesFitTheWindow: on a laptop (1280 px wide) and on a phone
// (390 px), no page is wider than the window, so that it never scrolls
// sideways: an event id and an object id of 100 characters without a
// space break, and a table wider than a phone's screen scrolls within its
// own box, the heading, the filters and the header staying in view. On
// the laptop a Stripe id (28 characters) stays on one line beside them.
func TestBrowserPagesFitTheWindow(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, idempotency.NewMemoryStore(), dashboard.Config{AllowRedrive: true, AllowForget: true})
	f.populate(t)
	longEvent, longObject := "evt_"+strings.Repeat("L", 96), "in_"+strings.Repeat("O", 97)
	const stripeEvent, stripeObject = "evt_1NirD82eZvKYlo2CIvbtLWuY", "in_1NirD82eZvKYlo2CjQ8dXm0T"
	f.failing.Store(true)
	f.deliver(t, "invoice.paid", longEvent, longObject)
	f.deliver(t, "invoice.paid", stripeEvent, stripeObject)
	f.work(t)
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, longEvent))
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, stripeEvent))

	base := f.srv.URL + mount
	for _, width := range []int64{1280, 390} {
		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(width, 900)))
		for _, page := range []string{"", "events?state=dead_letter", "event?id=" + url.QueryEscape(longEvent),
			"event?id=evt_waiting", "search?q=" + url.QueryEscape(longObject)} {
			require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+page), chromedp.WaitVisible(chromedp.CSS("main h1"))), page)
			overflow, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth - document.documentElement.clientWidth`))
			require.NoError(t, err)
			require.Zero(t, overflow, "%q at %d px: pixels wider than the window", page, width)
		}
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(base+"events?state=dead_letter"), chromedp.WaitVisible(chromedp.CSS("table.records"))))
	lines, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`[...document.querySelectorAll('tr[data-id="`+stripeEvent+`"] td.id a')].map(a =>
		Math.round(a.getBoundingClientRect().height / parseFloat(getComputedStyle(a).lineHeight)))`))
	require.NoError(t, err)
	require.Equal(t, []int{1, 1}, lines, "the lines of a Stripe event id and object id")
}
