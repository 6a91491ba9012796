package idempotency_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestClaimGuardsErrorText: a Claim.Guards entry no store can keep is
// refused with ErrInvalidKey by both stores, in a text that starts with
// the package's "idempotency: " as every other error of the package does,
// and names the entry.
func TestClaimGuardsErrorText(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			outcome, err := store.Run(t.Context(), idempotency.Claim{
				EventID: "evt_guards_text", EventType: "invoice.paid",
				Guards: []idempotency.GuardKey{{Scope: "s", Key: "k"}, {Scope: "", Key: "k"}},
			}, nil)
			require.Equal(t, idempotency.OutcomeFailed, outcome)
			require.ErrorIs(t, err, idempotency.ErrInvalidKey)
			require.Regexp(t, `^idempotency: `, err.Error())
			require.Contains(t, err.Error(), "Claim.Guards[1]")
			_, found, lookupErr := store.(ledger).LookupEvent(t.Context(), "evt_guards_text")
			require.NoError(t, lookupErr)
			require.False(t, found, "nothing is stored")
		})
	}
}
