package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// An event stored while its type had a handler, and worked by a process
// whose Handlers no longer have one once InboxConfig.RetryUnhandledFor has
// passed since it was received, is recorded ignored (InboxIgnored: "or the
// handler was removed since"), not skipped, and not applied. Before, it is
// retried (TestInboxUnhandledTypeRetried).
func TestInboxHandlerRemovedSinceIngestIsIgnored(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	cfg := idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger()}
	before := idempotency.NewHandlers()
	idempotency.On(before, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
		t.Error("the handler of the process that stored the event ran")
		return nil
	})
	in, err := idempotency.NewInbox(store, before, cfg)
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, "evt_removed", "in_removed", "acct_1"), testSecret).Outcome)

	after := idempotency.NewHandlers()
	idempotency.On(after, "customer.created", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Customer]) error { return nil })
	var results []idempotency.Result
	cfg.OnResult = func(r idempotency.Result) { results = append(results, r) }
	later, err := idempotency.NewInbox(store, after, cfg)
	require.NoError(t, err)
	clock.Advance(idempotency.DefaultRetryUnhandledFor)
	n, err := later.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	rec, found, err := later.Lookup(t.Context(), "evt_removed")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, idempotency.InboxIgnored, rec.State)
	require.Len(t, results, 1)
	require.Equal(t, idempotency.OutcomeIgnored, results[0].Outcome)
	require.Equal(t, idempotency.InboxIgnored, results[0].State)
}
