package idempotency_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestObserverDoneAfterOnResult: the Observer's done is called after
// OnResult, as Observer.Delivery and Observer.Attempt say, for a delivery
// and for an inbox attempt. (No test failed when done came first.)
func TestObserverDoneAfterOnResult(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var calls []string
	record := func(s string) func(idempotency.Result) {
		return func(idempotency.Result) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, s)
		}
	}
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(), OnResult: record("delivery OnResult"),
		Observer: &idempotency.Observer{Delivery: func(ctx context.Context, _ *http.Request) (context.Context, func(idempotency.Result)) {
			return ctx, record("delivery done")
		}},
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, invoicePayload(t, "evt_order_1", "in_1", "acct_1"), testSecret).Outcome)

	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{
		Logger: discardLogger(), Now: clock.Now, OnResult: record("attempt OnResult"),
		Observer: &idempotency.Observer{Attempt: func(ctx context.Context, _ idempotency.InboxRecord, _ string) (context.Context, func(idempotency.Result)) {
			return ctx, record("attempt done")
		}},
	})
	require.NoError(t, err)
	ih, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(ih, invoicePayload(t, "evt_order_2", "in_2", "acct_1"), testSecret).Outcome)
	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"delivery OnResult", "delivery done", "attempt OnResult", "attempt done"}, calls)
}
