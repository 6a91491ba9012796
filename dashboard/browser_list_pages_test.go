package dashboard_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestBrowserListPages: an operator pages through a list longer than the
// largest page (10 here, by NewWithMaxListLimit, so that three pages take 25
// events; 1,000 in a service), 25 events received in one microsecond, by
// its Next link, while new events arrive and states change between the
// pages: every event is on one page, once, in the inbox's order, and the
// newer ones come before the first page, not on a later one. A page larger
// than the largest is refused. A time range keeps what the inbox's List
// keeps, and a time that is not one is refused with a message.
func TestBrowserListPages(t *testing.T) {
	ctx := browser(t)
	db := idempotencytest.Postgres(t)
	cfg := dashboard.Config{AllowRedrive: true}
	const maxLimit, n = 10, 25
	f := newFixtureOf(t, db.NewStore(t, idempotency.PgxConfig{}), cfg, func(cfg dashboard.Config) (*dashboard.Dashboard, error) {
		return dashboard.NewWithMaxListLimit(cfg, maxLimit)
	})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < n; i += 4 {
				f.deliver(t, "invoice.paid", fmt.Sprintf("evt_page_%04d", i), fmt.Sprintf("in_page_%04d", i))
			}
		})
	}
	wg.Wait()
	all, err := f.inbox.List(t.Context(), idempotency.InboxFilter{Limit: idempotency.MaxListLimit})
	require.NoError(t, err)
	require.Len(t, all, n)

	base := f.srv.URL + mount
	status, body := f.get(t, fmt.Sprintf("events?kind=event&limit=%d", maxLimit+1))
	require.Equal(t, http.StatusBadRequest, status, "a page larger than the largest")
	contains(t, body, fmt.Sprintf("from 1 to %d", maxLimit))
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+fmt.Sprintf("events?kind=event&limit=%d", maxLimit)),
		chromedp.WaitVisible(chromedp.CSS("table.records"))))
	var listed []string
	for page := 0; ; page++ {
		listed = append(listed, attrs(t, ctx, `table.records tr[data-id]`, "data-id")...)
		next := attrs(t, ctx, `a#next-page`, "href")
		if len(next) == 0 {
			break
		}
		require.Less(t, page, 3, "three pages at most")
		// Between the pages: a new event, and the first page's events
		// applied.
		f.clock.Advance(time.Second)
		f.deliver(t, "invoice.paid", fmt.Sprintf("evt_new_%d", page), fmt.Sprintf("in_new_%d", page))
		f.work(t)
		require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`a#next-page`)),
			chromedp.WaitVisible(chromedp.CSS("main h1"))))
	}
	require.Len(t, listed, n, "every event on a page")
	require.Equal(t, ids(all), listed)

	// A time range: the events received in the second of the first new
	// one, as the inbox's List gives them (the receipt tasks that the
	// work enqueued then are not events).
	since := all[0].ReceivedAt.Add(time.Second)
	q := "events?kind=event&since=" + since.UTC().Format(time.RFC3339) + "&until=" + since.Add(time.Second).UTC().Format(time.RFC3339)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+q), chromedp.WaitVisible(chromedp.CSS("table.records"))))
	ranged, err := f.inbox.List(t.Context(), idempotency.InboxFilter{Kind: idempotency.KindEvent, Since: since.Truncate(time.Second), Until: since.Truncate(time.Second).Add(time.Second)})
	require.NoError(t, err)
	require.Equal(t, []string{"evt_new_0"}, ids(ranged))
	require.Equal(t, ids(ranged), attrs(t, ctx, `table.records tr[data-id]`, "data-id"))

	status, body = f.get(t, "events?since=yesterday")
	require.Equal(t, http.StatusBadRequest, status)
	contains(t, body, "since")
}
