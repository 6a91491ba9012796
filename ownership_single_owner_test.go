package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// An action with one owner refuses every other event type with
// ErrNotOwner, as one with several does. (No test failed when the check
// ran only for actions of several owners: TestActionNotOwner's action has
// two.)
func TestActionWithOneOwnerRefusesOthers(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	ran := 0
	welcome := idempotency.NewAction(hs, idempotency.ActionSpec{Name: "welcome", Key: "customer id", Owners: []string{"customer.created"}},
		func(context.Context, idempotency.Tx, string, struct{}) error { ran++; return nil })
	store := idempotency.NewMemoryStore()
	do := func(eventID, eventType string) error {
		_, err := store.Run(t.Context(), idempotency.Claim{EventID: eventID, EventType: eventType}, func(ctx context.Context, tx idempotency.Tx) error {
			_, err := welcome.Do(ctx, tx, "cus_one_owner", struct{}{})
			return err
		})
		return err
	}
	err := do("evt_one_owner_other", "customer.updated")
	require.ErrorIs(t, err, idempotency.ErrNotOwner)
	require.ErrorContains(t, err, `action "welcome" is owned by customer.created, called from an event of type customer.updated`)
	require.Zero(t, ran)
	require.NoError(t, do("evt_one_owner", "customer.created"))
	require.Equal(t, 1, ran)
}
