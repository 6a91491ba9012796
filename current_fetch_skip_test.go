package idempotency_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// A FetchFunc that returns Skip (wrapped or not) ends its event skipped
// with that reason, as a handler's Skip does: a platform that stopped
// fetching for a seller who left for good tells the store so, and the
// event is neither retried nor handed to its handler. Both modes, both
// stores.
func TestFetchFuncSkipEndsTheEventSkipped(t *testing.T) {
	t.Parallel()
	const reason = "the seller left the platform"
	for storeName, store := range bothStores(t) {
		t.Run(storeName, func(t *testing.T) {
			t.Parallel()
			var fetches, runs atomic.Int32
			hs := idempotency.NewHandlers()
			idempotency.OnCurrent(hs, []string{"capability.updated"},
				func(context.Context, string, string) (*stripe.Capability, error) {
					fetches.Add(1)
					return nil, fmt.Errorf("account gone: %w", idempotency.Skip(reason))
				},
				func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Capability]) error {
					runs.Add(1)
					return nil
				})
			ledger := store.(interface {
				LookupEvent(ctx context.Context, eventID string) (idempotency.EventRecord, bool, error)
			})
			payload := fixture(t, "capability.updated")
			id := parseFixture(t, payload).ID

			// Inbox mode.
			inbox := queueFixtures(t, store, hs, "capability.updated")
			n, err := inbox.WorkDue(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, n, "one attempt, not retried")
			rec, ok, err := inbox.Lookup(t.Context(), id)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, idempotency.InboxSkipped, rec.State, rec.LastError)
			event, ok, err := ledger.LookupEvent(t.Context(), id)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, idempotency.OutcomeSkipped, event.Outcome)
			require.Equal(t, reason, event.SkipReason)

			// Synchronous mode, another event of the same object.
			h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			other := idempotencytest.Derive(payload, map[string]any{"id": id + "_sync", "created": parseFixture(t, payload).Created + 1})
			require.Equal(t, idempotency.OutcomeSkipped, idempotencytest.Deliver(h, other, testSecret).Outcome)
			event, ok, err = ledger.LookupEvent(t.Context(), id+"_sync")
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, reason, event.SkipReason)

			require.EqualValues(t, 2, fetches.Load())
			require.Zero(t, runs.Load(), "the handler never ran")
		})
	}
}
