package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// A guard claimed inside a pseudo-nested transaction (PgxTx's Begin), or
// after a savepoint the handler's own SQL made (SAVEPOINT, as a
// repository on database/sql's ExecContext makes one), that the handler
// rolls back is not kept: the next event about the key finds it free.
// Claim.Guards, the hint KeyIsObjectID gives, must not change that: the
// store claimed the key before the savepoint, and answered the handler's
// Guard from that claim, which the rollback left in place.
func TestPgxGuardRolledBackWithNestedTxEvenWhenClaimedEarly(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	for _, c := range []struct {
		name       string
		early, sql bool
	}{{"guard-in-handler", false, false}, {"claimed-early", true, false}, {"claimed-early-sql-savepoint", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			key := "in_" + c.name
			first := idempotency.Claim{EventID: "evt_nested_1_" + c.name, EventType: "invoice.paid", ObjectID: key}
			if c.early {
				first.Guards = []idempotency.GuardKey{{Scope: "action:grant", Key: key}}
			}
			out, err := b.store.Run(t.Context(), first, func(ctx context.Context, tx idempotency.Tx) error {
				rollback := func(ctx context.Context) error {
					_, err := idempotency.PgxTx(tx).Exec(ctx, "ROLLBACK TO SAVEPOINT s")
					return err
				}
				if c.sql {
					if _, err := idempotency.PgxTx(tx).Exec(ctx, "  savepoint s"); err != nil {
						return err
					}
				} else {
					nested, err := idempotency.PgxTx(tx).Begin(ctx)
					if err != nil {
						return err
					}
					rollback = nested.Rollback
				}
				ran, err := tx.Guard(ctx, "action:grant", key)
				if err != nil {
					return err
				}
				require.True(t, ran, "the first event's guard")
				// The action's write failed: the handler rolls back what
				// it tried, the guard with it, and goes on.
				return rollback(ctx)
			})
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeProcessed, out)

			var again bool
			out, err = b.store.Run(t.Context(), idempotency.Claim{EventID: "evt_nested_2_" + c.name, EventType: "invoice.payment_succeeded", ObjectID: key},
				func(ctx context.Context, tx idempotency.Tx) (err error) {
					again, err = tx.Guard(ctx, "action:grant", key)
					return err
				})
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeProcessed, out)
			require.True(t, again, "the twin event must find the key free: the first claimed it only in a savepoint it rolled back")
		})
	}
}
