package idempotency_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

// OnCurrent's fetch record is the object's of one account: a capability
// fetched under one connected account says nothing of the capability of
// the same name ("card_payments") under another, whose event is fetched
// and applied, not taken as covered by the other account's fetch.
func TestOnCurrentFetchRecordPerAccount(t *testing.T) {
	t.Parallel()
	first, second := parseFixture(t, fixture(t, "capability.updated")), parseFixture(t, fixture(t, "capability.updated.other_account"))
	require.Equal(t, first.Data.Object.ID, second.Data.Object.ID)
	for storeName, store := range bothStores(t) {
		t.Run(storeName, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			fetched, applied := map[string]int{}, map[string]int{}
			hs := idempotency.NewHandlers()
			idempotency.OnCurrent(hs, []string{"capability.updated"},
				func(_ context.Context, id, account string) (*stripe.Capability, error) {
					mu.Lock()
					defer mu.Unlock()
					fetched[account]++
					return &stripe.Capability{ID: id, Account: &stripe.Account{ID: account}, Status: stripe.CapabilityStatusActive}, nil
				},
				func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Capability]) error {
					mu.Lock()
					defer mu.Unlock()
					applied[ev.Object.Account.ID]++
					return nil
				})
			// Both stored before either is fetched.
			inbox := queueFixtures(t, store, hs, "capability.updated", "capability.updated.other_account")
			for range 2 {
				_, err := inbox.WorkDue(t.Context())
				require.NoError(t, err)
			}
			for _, id := range []string{first.ID, second.ID} {
				rec, _, err := inbox.Lookup(t.Context(), id)
				require.NoError(t, err)
				require.Equal(t, idempotency.InboxProcessed, rec.State, id)
			}
			mu.Lock()
			defer mu.Unlock()
			want := map[string]int{first.Account: 1, second.Account: 1}
			require.Equal(t, want, fetched, "fetched per account")
			require.Equal(t, want, applied, "applied per account")
		})
	}
}
