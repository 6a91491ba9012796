package idempotency_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestObserverLinkPanicStoresNoLink: Observer.Link runs in an inbox's
// Handler, before the event is stored. Its panic is recovered there: the
// event is stored without a link (Attempt gets ""), answered queued, and
// the next delivery's link is stored as usual.
func TestObserverLinkPanicStoresNoLink(t *testing.T) {
	t.Parallel()
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
	links := map[string]string{}
	in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{Logger: discardLogger(),
		Observer: &idempotency.Observer{Attempt: func(ctx context.Context, rec idempotency.InboxRecord, link string) (context.Context, func(idempotency.Result)) {
			links[rec.EventID] = link
			return ctx, nil
		}}})
	require.NoError(t, err)
	var panics atomic.Bool
	panics.Store(true)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(),
		Observer: &idempotency.Observer{Link: func(context.Context) string {
			if panics.Load() {
				panic("the Link func's bug")
			}
			return traceparent
		}}})
	require.NoError(t, err)

	a := idempotencytest.Deliver(h, invoicePayload(t, "evt_link_panics", "in_1", "acct_1"), testSecret)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome)
	panics.Store(false)
	a = idempotencytest.Deliver(h, invoicePayload(t, "evt_link_after", "in_2", "acct_1"), testSecret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)

	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, map[string]string{"evt_link_panics": "", "evt_link_after": traceparent}, links)
}
