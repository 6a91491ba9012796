package dashboard_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestBrowserForgetConfirmed: forget cannot be undone, so the event
// page's Forget button leads to a page that asks to confirm it, showing
// the event's inbox state and claim, and forgets nothing; Cancel goes back to the event, and the confirmation's
// button forgets it, once.
func TestBrowserForgetConfirmed(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, idempotency.NewMemoryStore(), dashboard.Config{AllowForget: true})
	f.populate(t)
	base := f.srv.URL + mount
	kept := func(msg string) {
		t.Helper()
		require.Equal(t, idempotency.InboxProcessed, f.state(t, "evt_paid_1"), msg)
		_, claimed, err := f.store.LookupEvent(t.Context(), "evt_paid_1")
		require.NoError(t, err)
		require.True(t, claimed, msg)
		require.NotContains(t, f.logs(t), "dashboard: forget", msg)
	}

	// What follows the click: the confirmation, or the message of an
	// action taken.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"event?id=evt_paid_1"),
		chromedp.Click(chromedp.CSS("button.forget")),
		chromedp.WaitVisible(chromedp.CSS("#confirm-forget, #flash"))))
	kept("one click on Forget forgets nothing")
	require.Equal(t, "Forget evt_paid_1?", text(t, ctx, "main h1"))
	require.Contains(t, text(t, ctx, "#confirm-text"), "cannot be undone")
	require.Equal(t, "processed", text(t, ctx, "#forget-state"), "what will be forgotten")
	require.Contains(t, text(t, ctx, "#forget-claim"), "claimed: processed")

	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#cancel-forget")),
		chromedp.WaitVisible(chromedp.CSS("#record"))))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.Equal(t, base+"event?id=evt_paid_1", loc, "Cancel: back to the event")
	kept("cancelled")

	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("button.forget")),
		chromedp.WaitVisible(chromedp.CSS("#confirm-forget")),
		chromedp.Click(chromedp.CSS("#confirm-forget")),
		chromedp.WaitVisible(chromedp.CSS("#flash"))))
	require.Contains(t, text(t, ctx, "#flash"), "Forgot the event")
	_, claimed, err := f.store.LookupEvent(t.Context(), "evt_paid_1")
	require.NoError(t, err)
	require.False(t, claimed, "confirmed: forgotten")
	_, inInbox, err := f.inbox.Lookup(t.Context(), "evt_paid_1")
	require.NoError(t, err)
	require.False(t, inInbox)
	require.Equal(t, 1, strings.Count(f.logs(t), "dashboard: forget"), "forgotten once")
}
