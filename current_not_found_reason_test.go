package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestOnCurrentNotFoundReasonNamesTheFetchFunc: an OnCurrent event whose
// FetchFunc returns ErrObjectNotFound is skipped with a reason that names
// the FetchFunc, not the Stripe API, which a test's fake over a map never
// asked: in the delivery's Result and log line and in the ledger, and in
// an inbox attempt's log line and the ledger, on both stores. The reason
// said "the API no longer knows the object (404)".
func TestOnCurrentNotFoundReasonNamesTheFetchFunc(t *testing.T) {
	t.Parallel()
	const reason = "the object's FetchFunc returned ErrObjectNotFound (Retrieve's answer to a 404 resource_missing)"
	subs := map[string]*stripe.Subscription{"sub_1": {ID: "sub_1", Status: stripe.SubscriptionStatusActive}}
	register := func() *idempotency.Handlers {
		hs := idempotency.NewHandlers()
		idempotency.OnCurrent(hs, []string{"customer.subscription.updated"},
			func(_ context.Context, id, _ string) (*stripe.Subscription, error) {
				if sub, ok := subs[id]; ok {
					return sub, nil
				}
				return nil, idempotency.ErrObjectNotFound
			},
			func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Subscription]) error { return nil })
		return hs
	}
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ledger := store.(interface {
				LookupEvent(ctx context.Context, eventID string) (idempotency.EventRecord, bool, error)
			})
			logger, logs := testLogger()
			var res idempotency.Result
			h, err := idempotency.NewHandler(store, register(), idempotency.Config{
				Secrets: []string{testSecret}, Logger: logger,
				OnResult: func(r idempotency.Result) { res = r },
			})
			require.NoError(t, err)
			a := idempotencytest.Deliver(h, subscriptionEvent(t, "evt_gone_sync", "sub_gone"), testSecret)
			require.Equal(t, idempotency.OutcomeSkipped, a.Outcome, a.Body)
			require.Equal(t, reason, res.SkipReason)
			require.Contains(t, logs.String(), reason, "the delivery's log line")
			require.NotContains(t, logs.String(), "API no longer knows")
			rec, ok, err := ledger.LookupEvent(t.Context(), "evt_gone_sync")
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, reason, rec.SkipReason)

			inboxLogger, inboxLogs := testLogger()
			inbox, err := idempotency.NewInbox(store, register(), idempotency.InboxConfig{Logger: inboxLogger})
			require.NoError(t, err)
			ih, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			a = idempotencytest.Deliver(ih, subscriptionEvent(t, "evt_gone_inbox", "sub_gone"), testSecret)
			require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
			n, err := inbox.WorkDue(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, n)
			require.Contains(t, inboxLogs.String(), reason, "the attempt's log line")
			rec, ok, err = ledger.LookupEvent(t.Context(), "evt_gone_inbox")
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, idempotency.OutcomeSkipped, rec.Outcome)
			require.Equal(t, reason, rec.SkipReason)
		})
	}
}
