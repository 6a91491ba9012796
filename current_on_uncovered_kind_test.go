package idempotency_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestOnOfAKindOnCurrentDoesNotCoverTakesNoLock: an On handler takes an
// object's lock only for a kind of object an OnCurrent call of its
// Handlers registered. invoice.paid, beside OnCurrent's
// customer.subscription.updated, takes none: it runs, and commits, while
// the OnCurrent handler holds its subscription's lock, and its
// transaction holds no object's lock (on PostgreSQL a lock is a row of
// idempotency_objects that the transaction writes, and sees). On both
// stores.
func TestOnOfAKindOnCurrentDoesNotCoverTakesNoLock(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"memory", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var store idempotency.Store
			// locks are the objects whose lock tx holds.
			var locks func(ctx context.Context, tx idempotency.Tx) ([]string, error)
			if name == "memory" {
				store = idempotency.NewMemoryStore()
				locks = func(_ context.Context, tx idempotency.Tx) ([]string, error) {
					return idempotency.MemoryObjectLocks(tx), nil
				}
			} else {
				b := newPgBackend(t, idempotency.PgxConfig{})
				store = b.store
				locks = func(ctx context.Context, tx idempotency.Tx) ([]string, error) {
					// The fresh store has no committed row: what tx sees, it wrote.
					rows, err := idempotency.PgxTx(tx).Query(ctx, `SELECT scope || ' ' || object_id FROM `+quoteIdent(b.db.Schema)+`.idempotency_objects`)
					if err != nil {
						return nil, err
					}
					var out []string
					for rows.Next() {
						var l string
						if err := rows.Scan(&l); err != nil {
							return nil, err
						}
						out = append(out, l)
					}
					return out, rows.Err()
				}
			}
			fetched, proceed := make(chan struct{}), make(chan struct{})
			hs := idempotency.NewHandlers()
			idempotency.OnCurrent(hs, []string{"customer.subscription.updated"},
				func(_ context.Context, id, _ string) (*stripe.Subscription, error) {
					return &stripe.Subscription{ID: id, Status: stripe.SubscriptionStatusActive}, nil
				},
				func(ctx context.Context, _ idempotency.Tx, _ idempotency.Event[*stripe.Subscription]) error {
					close(fetched)
					select {
					case <-proceed:
						return nil
					case <-ctx.Done():
						return ctx.Err()
					}
				})
			var held []string
			idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, _ idempotency.Event[*stripe.Invoice]) (err error) {
				held, err = locks(ctx, tx)
				return err
			})
			h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)

			updated := make(chan idempotencytest.Answer, 1)
			go func() {
				updated <- idempotencytest.Deliver(h, eventPayload(t, "customer.subscription.updated", "evt_sub_held", nil), testSecret)
			}()
			<-fetched // the OnCurrent handler holds its subscription's lock
			a := idempotencytest.Deliver(h, eventPayload(t, "invoice.paid", "evt_inv_free", nil), testSecret)
			close(proceed)
			require.Equal(t, http.StatusOK, a.Status, a.Body)
			require.Equal(t, idempotency.OutcomeProcessed, a.Outcome)
			require.Empty(t, held, "invoice.paid's transaction holds an object's lock")
			a = <-updated
			require.Equal(t, http.StatusOK, a.Status, a.Body)
			require.Equal(t, idempotency.OutcomeProcessed, a.Outcome)
		})
	}
}
