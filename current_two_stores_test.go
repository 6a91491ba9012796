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

// gatedStore holds each Run until release is closed, after closing
// entered: a delivery that has arrived and waits to reach its store.
type gatedStore struct {
	idempotency.Store
	entered chan struct{}
	release chan struct{}
}

func (s *gatedStore) Run(ctx context.Context, c idempotency.Claim, apply idempotency.ApplyFunc) (idempotency.Outcome, error) {
	close(s.entered)
	<-s.release
	return s.Store.Run(ctx, c, apply)
}

// TestOnCurrentFetchCoversOnlyItsStore: one Handlers serving two stores
// (two endpoints, two schemas) in one process. A fetch committed in store
// A wrote the object's state to A alone: a delivery to store B that
// arrived before that fetch began must still fetch and write B's state,
// not be answered processed with B's handler never run.
func TestOnCurrentFetchCoversOnlyItsStore(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	writes := map[idempotency.Store]int{}
	storeA, storeB := idempotency.NewMemoryStore(), idempotency.NewMemoryStore()
	hs := idempotency.NewHandlers()
	idempotency.OnCurrent(hs, []string{"customer.subscription.updated"},
		func(_ context.Context, id, _ string) (*stripe.Subscription, error) {
			return &stripe.Subscription{ID: id, Status: stripe.SubscriptionStatusActive}, nil
		},
		func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Subscription]) error {
			store := idempotency.Store(storeA)
			if tx.EventID() == "evt_to_b" {
				store = storeB
			}
			tx.AfterCommit(func(context.Context) {
				mu.Lock()
				defer mu.Unlock()
				writes[store]++
			})
			return nil
		})
	gate := &gatedStore{Store: storeB, entered: make(chan struct{}), release: make(chan struct{})}
	cfg := idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()}
	hA, err := idempotency.NewHandler(storeA, hs, cfg)
	require.NoError(t, err)
	hB, err := idempotency.NewHandler(gate, hs, cfg)
	require.NoError(t, err)

	evB := eventPayload(t, "customer.subscription.updated", "evt_to_b", nil)
	toB := make(chan idempotencytest.Answer, 1)
	go func() { toB <- idempotencytest.Deliver(hB, evB, testSecret) }()
	<-gate.entered // B's delivery has arrived
	a := idempotencytest.Deliver(hA, eventPayload(t, "customer.subscription.updated", "evt_to_a", nil), testSecret)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	close(gate.release)
	b := <-toB
	require.Equal(t, http.StatusOK, b.Status, b.Body)

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, writes[storeA], "store A's handler runs")
	require.Equal(t, 1, writes[storeB], "store B's handler was skipped on a fetch that wrote store A")
}
