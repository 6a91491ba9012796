package idempotency_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestOnCurrentInboxCoalescesOnlyWhatWasStoredBeforeTheFetch: in inbox
// mode a fetch covers the events of its object stored before it, not
// those stored after it: updates of one subscription that an idle inbox
// applies as each arrives (a plan change's updates, sent over a second)
// fetch once each, and only a backlog (here three updates stored before
// the workers run) costs one fetch. On both stores.
func TestOnCurrentInboxCoalescesOnlyWhatWasStoredBeforeTheFetch(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hs := idempotency.NewHandlers()
			subs := onSubscriptionCounted(hs, "")
			inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger()})
			require.NoError(t, err)
			h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			deliver := func(ids ...string) {
				t.Helper()
				for _, id := range ids {
					a := idempotencytest.Deliver(h, eventPayload(t, "customer.subscription.updated", id, nil), testSecret)
					require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
				}
				_, err := inbox.WorkDue(t.Context())
				require.NoError(t, err)
			}

			deliver("evt_arrived_1")
			deliver("evt_arrived_2")
			require.EqualValues(t, 2, subs.fetches.Load(), "an update stored after the fetch before it is fetched again")
			require.True(t, subs.ran("evt_arrived_2"))

			deliver("evt_backlog_1", "evt_backlog_2", "evt_backlog_3")
			require.EqualValues(t, 3, subs.fetches.Load(), "one fetch covers the three updates stored before it")
			for _, id := range []string{"evt_arrived_1", "evt_arrived_2", "evt_backlog_1", "evt_backlog_2", "evt_backlog_3"} {
				rec, ok, err := inbox.Lookup(t.Context(), id)
				require.NoError(t, err)
				require.True(t, ok)
				require.Equal(t, idempotency.InboxProcessed, rec.State, id)
			}
		})
	}
}
