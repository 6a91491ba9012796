package idempotency_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// Objects whose id is unique within one account only (a capability's is
// its name, "card_payments"; an application's is the platform's ca_ id,
// the same under every connected account it is authorized on) are
// different objects under two accounts: the inbox orders events per
// object of one account, so one connected account's failing event does
// not hold another's back.
func TestInboxOrderPerObjectOfOneAccount(t *testing.T) {
	t.Parallel()
	for _, pair := range [][2]string{
		{"capability.updated", "capability.updated.other_account"},
		{"account.application.authorized", "account.application.authorized.other_account"},
	} {
		for storeName, store := range bothStores(t) {
			t.Run(storeName+"/"+pair[0], func(t *testing.T) {
				t.Parallel()
				first, second := parseFixture(t, fixture(t, pair[0])), parseFixture(t, fixture(t, pair[1]))
				require.Equal(t, first.Data.Object.ID, second.Data.Object.ID)
				require.NotEqual(t, first.Account, second.Account)
				require.Negative(t, strings.Compare(first.ID, second.ID), "the first account's event sorts first")

				var mu sync.Mutex
				applied := map[string]int{}
				hs := idempotency.NewHandlers()
				idempotency.On(hs, first.Type, func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[json.RawMessage]) error {
					if ev.Account == first.Account {
						return fmt.Errorf("downstream of %s refused", ev.Account)
					}
					mu.Lock()
					defer mu.Unlock()
					applied[ev.Account]++
					return nil
				})
				inbox := queueFixtures(t, store, hs, pair[:]...)
				held, err := inbox.HeldBy(t.Context(), second.ID)
				require.NoError(t, err)
				require.Empty(t, held, "the other account's event waits behind nothing")

				n, err := inbox.WorkDue(t.Context())
				require.NoError(t, err)
				require.Equal(t, 2, n)
				a, _, err := inbox.Lookup(t.Context(), first.ID)
				require.NoError(t, err)
				require.Equal(t, idempotency.InboxFailed, a.State)
				b, _, err := inbox.Lookup(t.Context(), second.ID)
				require.NoError(t, err)
				require.Equal(t, idempotency.InboxProcessed, b.State, "held behind the other account's failed event")
				mu.Lock()
				defer mu.Unlock()
				require.Equal(t, map[string]int{second.Account: 1}, applied)
			})
		}
	}
}
