package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// An action keeps its own copy of ActionSpec.Owners, and Actions returns
// copies: a caller that changes its slice, or the table's, after the
// declaration changes neither the table nor who may call the action. (No
// test failed when either slice was shared.)
func TestActionOwnersAreCopies(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	owners := []string{"invoice.paid"}
	grant := idempotency.NewAction(hs, idempotency.ActionSpec{Name: "grant-copied", Key: "invoice id", Owners: owners},
		func(context.Context, idempotency.Tx, string, struct{}) error { return nil })
	owners[0] = "customer.created"
	require.Equal(t, []string{"invoice.paid"}, hs.Actions()[0].Owners, "after the spec's slice changed")
	hs.Actions()[0].Owners[0] = "charge.succeeded"
	require.Equal(t, []string{"invoice.paid"}, hs.Actions()[0].Owners, "after the table's slice changed")

	outcome, err := idempotency.NewMemoryStore().Run(t.Context(), idempotency.Claim{EventID: "evt_owners_copied", EventType: "invoice.paid"},
		func(ctx context.Context, tx idempotency.Tx) error {
			ran, err := grant.Do(ctx, tx, "in_owners_copied", struct{}{})
			if err == nil {
				require.True(t, ran)
			}
			return err
		})
	require.NoError(t, err, "invoice.paid still owns the action")
	require.Equal(t, idempotency.OutcomeProcessed, outcome)
}
