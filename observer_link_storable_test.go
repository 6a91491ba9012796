package idempotency_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestObserverLinkStoredOnlyWhenStorable: what Observer.Link returns is
// stored with the event and given back to Attempt when it is at most 256
// bytes of text PostgreSQL can keep; a longer one, or one with invalid
// UTF-8 or a NUL byte, is not stored (Attempt gets ""), and the delivery
// is queued all the same. Both stores. (No test failed when a link of
// exactly 256 bytes was dropped, or when invalid text was stored.)
func TestObserverLinkStoredOnlyWhenStorable(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
			var mu sync.Mutex
			links := map[string]string{}
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
				Logger: discardLogger(), Now: clock.Now,
				Observer: &idempotency.Observer{Attempt: func(ctx context.Context, rec idempotency.InboxRecord, link string) (context.Context, func(idempotency.Result)) {
					mu.Lock()
					defer mu.Unlock()
					links[rec.EventID] = link
					return ctx, nil
				}},
			})
			require.NoError(t, err)
			var next string // what Link returns for the next delivery
			h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(),
				Observer: &idempotency.Observer{Link: func(context.Context) string { return next }}})
			require.NoError(t, err)
			longest := "00-" + strings.Repeat("a", 253)
			cases := map[string]struct{ link, want string }{
				"evt_link_256":     {longest, longest},
				"evt_link_257":     {longest + "a", ""},
				"evt_link_invalid": {"00-\xff", ""},
				"evt_link_nul":     {"00-\x00", ""},
			}
			for id, c := range cases {
				next = c.link
				a := idempotencytest.Deliver(h, invoicePayload(t, id, "in_"+id, "acct_1"), testSecret)
				require.Equal(t, idempotency.OutcomeQueued, a.Outcome, "%s: %s", id, a.Body)
			}
			n, err := in.WorkDue(t.Context())
			require.NoError(t, err)
			require.Equal(t, len(cases), n)
			mu.Lock()
			defer mu.Unlock()
			for id, c := range cases {
				require.Equal(t, c.want, links[id], id)
			}
		})
	}
}
