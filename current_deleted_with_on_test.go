package idempotency_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// products is a service's table of products, on either store: the
// OnCurrent handler upserts a product's name, the On handler of
// product.deleted removes it, or, with tombstones, marks it deleted and
// the upsert leaves a marked product alone.
type products interface {
	upsert(ctx context.Context, tx idempotency.Tx, id, name string) error
	remove(ctx context.Context, tx idempotency.Tx, id string) error
	present(t *testing.T, id string) bool
}

type memoryProducts struct {
	tombstones bool
	mu         sync.Mutex
	rows       map[string]bool // id: deleted
}

func (p *memoryProducts) upsert(_ context.Context, _ idempotency.Tx, id, _ string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if deleted, ok := p.rows[id]; !ok || !deleted || !p.tombstones {
		p.rows[id] = false
	}
	return nil
}

func (p *memoryProducts) remove(_ context.Context, _ idempotency.Tx, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tombstones {
		p.rows[id] = true
	} else {
		delete(p.rows, id)
	}
	return nil
}

func (p *memoryProducts) present(_ *testing.T, id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	deleted, ok := p.rows[id]
	return ok && !deleted
}

type pgProducts struct {
	tombstones bool
	db         *pgBackend
}

func (p *pgProducts) upsert(ctx context.Context, tx idempotency.Tx, id, name string) error {
	q := `INSERT INTO products (id, name) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name`
	if p.tombstones {
		q += ` WHERE NOT products.deleted`
	}
	_, err := idempotency.PgxTx(tx).Exec(ctx, q, id, name)
	return err
}

func (p *pgProducts) remove(ctx context.Context, tx idempotency.Tx, id string) error {
	q := `DELETE FROM products WHERE id = $1`
	if p.tombstones {
		q = `INSERT INTO products (id, name, deleted) VALUES ($1, '', true) ON CONFLICT (id) DO UPDATE SET deleted = true`
	}
	_, err := idempotency.PgxTx(tx).Exec(ctx, q, id)
	return err
}

func (p *pgProducts) present(t *testing.T, id string) bool {
	var n int
	require.NoError(t, p.db.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM products WHERE id = $1 AND NOT deleted`, id).Scan(&n))
	return n == 1
}

// TestOnCurrentStateFetchedBeforeADeletionWithOn: the README registers
// the .deleted type of an object Stripe deletes for good with On, and its
// other types with OnCurrent. In synchronous mode that On handler does not
// wait for OnCurrent's lock of the object: a state fetched before the
// deletion, written after the .deleted handler committed, brings a
// deleted row back (and no later event corrects it: their fetches answer
// 404). With the README's tombstone (mark the row deleted; the upsert
// leaves a marked row alone) the product stays deleted. On both stores.
func TestOnCurrentStateFetchedBeforeADeletionWithOn(t *testing.T) {
	t.Parallel()
	for _, tombstones := range []bool{false, true} {
		for _, name := range []string{"memory", "postgres"} {
			t.Run(name+map[bool]string{false: "/delete", true: "/tombstone"}[tombstones], func(t *testing.T) {
				t.Parallel()
				var store idempotency.Store
				var table products
				if name == "memory" {
					store = idempotency.NewMemoryStore()
					table = &memoryProducts{tombstones: tombstones, rows: map[string]bool{"prod_gone": false}}
				} else {
					b := newPgBackend(t, idempotency.PgxConfig{})
					_, err := b.db.Pool.Exec(t.Context(), `CREATE TABLE products (id text PRIMARY KEY, name text NOT NULL, deleted bool NOT NULL DEFAULT false);
INSERT INTO products (id, name) VALUES ('prod_gone', 'Pro')`)
					require.NoError(t, err)
					store, table = b.store, &pgProducts{tombstones: tombstones, db: b}
				}
				fetched, deleted := make(chan struct{}), make(chan struct{})
				hs := idempotency.NewHandlers()
				idempotency.OnCurrent(hs, []string{"product.updated"},
					func(_ context.Context, id, _ string) (*stripe.Product, error) {
						return &stripe.Product{ID: id, Name: "Pro"}, nil // as it was just before its deletion
					},
					func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Product]) error {
						close(fetched)
						select {
						case <-deleted:
						case <-ctx.Done():
							return ctx.Err()
						}
						return table.upsert(ctx, tx, ev.Object.ID, ev.Object.Name)
					})
				idempotency.On(hs, "product.deleted", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Product]) error {
					return table.remove(ctx, tx, ev.Object.ID)
				})
				h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
				require.NoError(t, err)
				event := func(id, typ string) []byte {
					return idempotencytest.Derive(fixture(t, "invoice.paid"), map[string]any{"id": id, "type": typ,
						"data.object": map[string]any{"id": "prod_gone", "object": "product", "name": "Pro"}})
				}

				upd, del := event("evt_prod_updated", "product.updated"), event("evt_prod_deleted", "product.deleted")

				updated := make(chan idempotencytest.Answer, 1)
				go func() { updated <- idempotencytest.Deliver(h, upd, testSecret) }()
				<-fetched
				a := idempotencytest.Deliver(h, del, testSecret)
				close(deleted)
				require.Equal(t, http.StatusOK, a.Status, a.Body)
				require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, "applied while the OnCurrent handler of the product held its lock")
				a = <-updated
				require.Equal(t, http.StatusOK, a.Status, a.Body)
				require.Equal(t, !tombstones, table.present(t, "prod_gone"))
			})
		}
	}
}
