package idempotency_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

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
// other types with OnCurrent. That On handler takes the object's lock, as
// OnCurrent's handlers of its kind do: it waits for an OnCurrent handler
// that fetched the product just before its deletion to commit, and then
// deletes what it wrote. The product stays deleted, with a DELETE as with
// a tombstone (mark the row deleted; the upsert leaves a marked row
// alone), and also when an inbox worker applies product.deleted beside a
// synchronous replica on the same store. It did not wait: the state
// fetched before the deletion, written after the .deleted handler
// committed, brought the deleted row back, and no later event corrected
// it (their fetches answer 404). On both stores.
func TestOnCurrentStateFetchedBeforeADeletionWithOn(t *testing.T) {
	t.Parallel()
	for _, variant := range []struct {
		name       string
		tombstones bool
		inbox      bool // product.deleted is applied by an inbox worker
	}{
		{name: "delete"},
		{name: "tombstone", tombstones: true},
		{name: "delete-by-inbox", inbox: true},
	} {
		for _, name := range []string{"memory", "postgres"} {
			t.Run(name+"/"+variant.name, func(t *testing.T) {
				t.Parallel()
				var store idempotency.Store
				var table products
				var waiting func() int // transactions waiting for a lock another holds
				if name == "memory" {
					s := idempotency.NewMemoryStore()
					store, waiting = s, func() int { return idempotency.MemoryWaiting(s) }
					table = &memoryProducts{tombstones: variant.tombstones, rows: map[string]bool{"prod_gone": false}}
				} else {
					b := newPgBackend(t, idempotency.PgxConfig{})
					_, err := b.db.Pool.Exec(t.Context(), `CREATE TABLE products (id text PRIMARY KEY, name text NOT NULL, deleted bool NOT NULL DEFAULT false);
INSERT INTO products (id, name) VALUES ('prod_gone', 'Pro')`)
					require.NoError(t, err)
					store, table, waiting = b.store, &pgProducts{tombstones: variant.tombstones, db: b}, func() int { return b.waiting(t) }
				}
				fetched, proceed := make(chan struct{}), make(chan struct{})
				hs := idempotency.NewHandlers()
				idempotency.OnCurrent(hs, []string{"product.updated"},
					func(_ context.Context, id, _ string) (*stripe.Product, error) {
						return &stripe.Product{ID: id, Name: "Pro"}, nil // as it was just before its deletion
					},
					func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Product]) error {
						close(fetched)
						select {
						case <-proceed:
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
				<-fetched // the OnCurrent handler holds the product, with its state before the deletion
				// deleted has product.deleted's outcome once its transaction
				// ended.
				deleted := make(chan idempotency.Outcome, 1)
				if variant.inbox {
					in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger()})
					require.NoError(t, err)
					queuing, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
					require.NoError(t, err)
					a := idempotencytest.Deliver(queuing, del, testSecret)
					require.Equal(t, `{"outcome":"queued"}`, a.Body)
					go func() {
						n, err := in.WorkDue(context.Background())
						if err != nil || n != 1 {
							deleted <- idempotency.OutcomeFailed
							return
						}
						rec, _, err := in.Lookup(context.Background(), "evt_prod_deleted")
						if err != nil || rec.State != idempotency.InboxProcessed {
							deleted <- idempotency.OutcomeFailed
							return
						}
						deleted <- idempotency.OutcomeProcessed
					}()
				} else {
					go func() {
						deleted <- idempotencytest.Deliver(h, del, testSecret).Outcome
					}()
				}
				require.Eventually(t, func() bool {
					if len(deleted) == 1 { // committed beside the OnCurrent handler: the bug
						return true
					}
					return waiting() == 1 // waits for the product's lock
				}, time.Minute, time.Millisecond)
				close(proceed)
				a := <-updated
				require.Equal(t, http.StatusOK, a.Status, a.Body)
				require.Equal(t, idempotency.OutcomeProcessed, a.Outcome)
				require.Equal(t, idempotency.OutcomeProcessed, <-deleted)
				require.False(t, table.present(t, "prod_gone"), "the state fetched before the deletion, written after it, brought the product back")
			})
		}
	}
}
