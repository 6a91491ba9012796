package idempotency_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestLedgerLookupsRefuseAKeyNoClaimCanHave: an event id, a guard scope
// or a guard key no claim can have (empty, a NUL byte, invalid UTF-8,
// over 1024 bytes) is refused with ErrInvalidKey by LookupEvent and
// LookupGuard on both stores, each error naming its method and the field
// in the same words on both (the parity test compares them), as Run
// refuses it in a claim and Inbox.Lookup refuses an id. (They answered
// "not found": a mistyped or truncated id looked like an event the
// ledger does not have.) A key of 1024 bytes is a key: not found, no
// error; what is claimed is still found.
func TestLedgerLookupsRefuseAKeyNoClaimCanHave(t *testing.T) {
	t.Parallel()
	for storeName, store := range bothStores(t) {
		t.Run(storeName, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			ledger := store.(idempotencytest.LookupStore)
			_, err := store.Run(ctx, idempotency.Claim{EventID: "evt_lookup_refused", EventType: "invoice.paid"},
				func(ctx context.Context, tx idempotency.Tx) error {
					_, err := tx.Guard(ctx, "invoice-credit", "in_lookup_refused")
					return err
				})
			require.NoError(t, err)
			lookups := map[string]func(bad string) (found bool, err error){
				"LookupEvent, the id": func(bad string) (bool, error) {
					_, found, err := ledger.LookupEvent(ctx, bad)
					return found, err
				},
				"LookupGuard, the scope": func(bad string) (bool, error) {
					_, found, err := ledger.LookupGuard(ctx, bad, "in_lookup_refused")
					return found, err
				},
				"LookupGuard, the key": func(bad string) (bool, error) {
					_, found, err := ledger.LookupGuard(ctx, "invoice-credit", bad)
					return found, err
				},
			}
			field := map[string]string{"LookupEvent, the id": "event id", "LookupGuard, the scope": "Guard scope", "LookupGuard, the key": "Guard key"}
			for name, lookup := range lookups {
				method, _, _ := strings.Cut(name, ",")
				for _, bad := range []string{"", "in_\x00", "in_\xff", strings.Repeat("x", 1025)} {
					found, err := lookup(bad)
					require.False(t, found)
					require.ErrorIs(t, err, idempotency.ErrInvalidKey, "%s %.20q", name, bad)
					require.ErrorContains(t, err, field[name], "%s %.20q", name, bad)
					require.True(t, strings.HasPrefix(err.Error(), fmt.Sprintf("idempotency: %s: ", method)), "%s", err)
				}
				found, err := lookup(strings.Repeat("x", 1024))
				require.NoError(t, err, name)
				require.False(t, found, name)
			}
			rec, found, err := ledger.LookupEvent(ctx, "evt_lookup_refused")
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, idempotency.OutcomeProcessed, rec.Outcome)
			_, found, err = ledger.LookupGuard(ctx, "invoice-credit", "in_lookup_refused")
			require.NoError(t, err)
			require.True(t, found)
		})
	}
}
