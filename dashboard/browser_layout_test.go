package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestBrowserPagesFitTheWindow: on a laptop (1280 px wide) and on a phone
// (390 px), no page is wider than the window, so that it never scrolls
// sideways: an event id and an object id of 100 characters without a
// space break, and a table wider than a phone's screen scrolls within its
// own box, the heading, the filters and the header staying in view. On
// the laptop a Stripe id (28 characters) stays on one line beside them,
// and a time's column is as wide as its heading; the Redrive column's
// heading, for a screen reader, is not seen.
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
	// Redriven once and dead-lettered again: its page says when, beside
	// the attempts.
	_, err := f.inbox.Redrive(t.Context(), idempotency.RedriveFilter{EventIDs: []string{longEvent}})
	require.NoError(t, err)
	f.work(t)
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, longEvent))
	require.Equal(t, 1, record(t, f.inbox, longEvent).Redrives)
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, stripeEvent))

	base := f.srv.URL + mount
	// The same inbox without redrive, whose dead letter's page names the
	// idemctl command, id and all, in place of the button.
	noRedrive, err := dashboard.New(dashboard.Config{Inbox: f.inbox, Ledger: f.store, Now: f.clock.Now, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	noRedriveSrv := httptest.NewServer(http.StripPrefix(strings.TrimSuffix(mount, "/"), noRedrive))
	t.Cleanup(noRedriveSrv.Close)
	for _, width := range []int64{1280, 390} {
		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(width, 900)))
		for _, page := range []string{"", "events?state=dead_letter", "event?id=" + url.QueryEscape(longEvent),
			"event?id=evt_waiting", "search?q=" + url.QueryEscape(longObject), "events?state=dead_letter&object=" + url.QueryEscape(longObject),
			"search?q=" + url.QueryEscape(longEvent),
			noRedriveSrv.URL + mount + "event?id=" + url.QueryEscape(longEvent)} {
			if !strings.HasPrefix(page, "http") {
				page = base + page
			}
			require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("main h1"))), page)
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
	// A time's UTC text wraps under its age rather than widen its column
	// past its heading's width: the table is no wider for it.
	spare, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`[...document.querySelectorAll('table.records th')]
		.filter(th => th.textContent == 'Received' || th.textContent == 'Next attempt').map(th => {
			const r = document.createRange(), s = getComputedStyle(th); r.selectNodeContents(th);
			return Math.round(th.getBoundingClientRect().width - r.getBoundingClientRect().width - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight)) })`))
	require.NoError(t, err)
	require.Equal(t, []int{0, 0}, spare, "pixels the Received and Next attempt columns are wider than their headings")
	// The Redrive column's heading is for a screen reader: on screen it
	// takes a pixel at most.
	hidden, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`[...document.querySelectorAll('table.records th .visually-hidden')].map(e => {
		const r = e.getBoundingClientRect(); return Math.round(r.width * r.height) })`))
	require.NoError(t, err)
	require.Equal(t, []int{1}, hidden, "pixels of the Redrive column's heading")
}

// TestBrowserListLastErrorClamped: a list shows a last error of 1000
// bytes (a handler that quotes an API's answer) in three lines at most,
// so that a screen of failed records above the dead letters stays a
// screen; the event's page shows it whole.
func TestBrowserListLastErrorClamped(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, idempotency.NewMemoryStore(), dashboard.Config{AllowRedrive: true})
	long := strings.Repeat("ledger answered 502 Bad Gateway: upstream reset the connection; ", 16)[:1000]
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[json.RawMessage]) error {
		return errors.New(long)
	})
	quiet := slog.New(slog.DiscardHandler)
	inbox, err := idempotency.NewInbox(f.store, hs, idempotency.InboxConfig{MaxAttempts: 1, Now: f.clock.Now, Logger: quiet})
	require.NoError(t, err)
	hook, err := inbox.Handler(idempotency.Config{Secrets: []string{secret}, Now: f.clock.Now, Logger: quiet})
	require.NoError(t, err)
	a := idempotencytest.Deliver(hook, eventPayload(t, "invoice.paid", "evt_long_error", "in_long_error"), secret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	_, err = inbox.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, "evt_long_error"))

	// The lines of td.err: its content's height over its line height.
	const lines = `(td => { const s = getComputedStyle(td);
		return Math.round((td.clientHeight - parseFloat(s.paddingTop) - parseFloat(s.paddingBottom)) / parseFloat(s.lineHeight)) })`
	base := f.srv.URL + mount
	for _, page := range []string{"", "events?state=dead_letter"} {
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+page), chromedp.WaitVisible(chromedp.CSS("table.records"))), page)
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](lines+`(document.querySelector('tr[data-id="evt_long_error"] td.err'))`))
		require.NoError(t, err)
		require.LessOrEqual(t, n, 3, "%q: the last error's lines", page)
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"event?id=evt_long_error"), chromedp.WaitVisible(chromedp.CSS("#last-error"))))
	require.Equal(t, strings.TrimSpace(long), text(t, ctx, "#last-error"), "the event's page: all of it")
}
