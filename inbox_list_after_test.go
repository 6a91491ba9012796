package idempotency_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// InboxFilter.After pages through a list: each page starts after the
// last record of the one before, in List's order (newest received first,
// then the greater event id), so that every record is listed once, also
// among records received in the same microsecond and while new ones
// arrive between pages. The position's time is compared at the
// microsecond the stores keep.
func TestInboxListAfterPages(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			inbox, clock, _ := queuedInvoice(t, store, idempotency.InboxConfig{}, "evt_page_00")
			h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			deliver := func(id string) {
				t.Helper()
				payload := invoicePayload(t, id, "in_"+id, "acct_1")
				require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, payload, testSecret).Outcome)
			}
			// Three received with evt_page_00, in one microsecond, then
			// four a second later.
			for i := 1; i <= 7; i++ {
				if i == 4 {
					clock.Advance(time.Second)
				}
				deliver(fmt.Sprintf("evt_page_%02d", i))
			}
			all, err := inbox.List(t.Context(), idempotency.InboxFilter{})
			require.NoError(t, err)
			require.Len(t, all, 8)

			var paged []string
			f := idempotency.InboxFilter{Limit: 3}
			for page := 0; ; page++ {
				recs, err := inbox.List(t.Context(), f)
				require.NoError(t, err)
				if len(recs) == 0 {
					break
				}
				for _, r := range recs {
					paged = append(paged, r.EventID)
				}
				last := recs[len(recs)-1]
				f.After = idempotency.InboxPosition{ReceivedAt: last.ReceivedAt, EventID: last.EventID}
				if page == 0 {
					// Arrives between pages: newer than the first page,
					// so on none of the next ones.
					clock.Advance(time.Second)
					deliver("evt_page_new")
				}
			}
			want := make([]string, len(all))
			for i, r := range all {
				want[i] = r.EventID
			}
			require.Equal(t, want, paged)
			// The position's time is compared at the microsecond the
			// stores keep: its nanoseconds dropped, the position is its
			// record's, and the list goes on after it.
			first := all[0].Position()
			first.ReceivedAt = first.ReceivedAt.Add(500 * time.Nanosecond)
			recs, err := inbox.List(t.Context(), idempotency.InboxFilter{After: first, Limit: 1})
			require.NoError(t, err)
			require.Len(t, recs, 1)
			require.Equal(t, all[1].EventID, recs[0].EventID, "the position's nanoseconds dropped")

			_, err = inbox.List(t.Context(), idempotency.InboxFilter{After: idempotency.InboxPosition{ReceivedAt: clock.Now()}})
			require.ErrorIs(t, err, idempotency.ErrInvalidKey, "a position without its event id")
			// An event id without its time (a position built by hand) would
			// list nothing, as if no event came after it: refused too.
			_, err = inbox.List(t.Context(), idempotency.InboxFilter{After: idempotency.InboxPosition{EventID: all[0].EventID}})
			require.ErrorContains(t, err, "InboxFilter.After.ReceivedAt", "a position without its received time")
		})
	}
}
