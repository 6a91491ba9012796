package idempotency_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// gateOneEvent holds the Run of one event until release is closed, after
// closing entered: that delivery has arrived and waits to reach its store.
type gateOneEvent struct {
	idempotency.Store
	eventID string
	entered chan struct{}
	release chan struct{}
}

func (s *gateOneEvent) Run(ctx context.Context, c idempotency.Claim, apply idempotency.ApplyFunc) (idempotency.Outcome, error) {
	if c.EventID == s.eventID {
		close(s.entered)
		<-s.release
	}
	return s.Store.Run(ctx, c, apply)
}

// TestOnCurrentFetchInFlightDoesNotCoverALaterArrival: a synchronous
// delivery that arrives while a fetch of its object is in flight is not
// covered by that fetch (which may have read the object before the
// delivery's change): it fetches again and its handler runs. Only a fetch
// that started after the delivery arrived covers it.
func TestOnCurrentFetchInFlightDoesNotCoverALaterArrival(t *testing.T) {
	t.Parallel()
	var fetches atomic.Int32
	fetching := make(chan struct{})
	proceed := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	ran := map[string]bool{}
	hs := idempotency.NewHandlers()
	idempotency.OnCurrent(hs, []string{"customer.subscription.updated"},
		func(_ context.Context, id, _ string) (*stripe.Subscription, error) {
			if fetches.Add(1) == 1 {
				once.Do(func() { close(fetching) })
				<-proceed // the first fetch is in flight while evt_b arrives
			}
			return &stripe.Subscription{ID: id, Status: stripe.SubscriptionStatusActive}, nil
		},
		func(_ context.Context, tx idempotency.Tx, _ idempotency.Event[*stripe.Subscription]) error {
			mu.Lock()
			defer mu.Unlock()
			ran[tx.EventID()] = true
			return nil
		})
	gate := &gateOneEvent{Store: idempotency.NewMemoryStore(), eventID: "evt_b", entered: make(chan struct{}), release: make(chan struct{})}
	h, err := idempotency.NewHandler(gate, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)

	toA := make(chan idempotencytest.Answer, 1)
	go func() {
		toA <- idempotencytest.Deliver(h, eventPayload(t, "customer.subscription.updated", "evt_a", nil), testSecret)
	}()
	<-fetching
	toB := make(chan idempotencytest.Answer, 1)
	go func() {
		toB <- idempotencytest.Deliver(h, eventPayload(t, "customer.subscription.updated", "evt_b", nil), testSecret)
	}()
	<-gate.entered // evt_b has arrived, after evt_a's fetch started
	close(proceed)
	a := <-toA
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	close(gate.release)
	b := <-toB
	require.Equal(t, http.StatusOK, b.Status, b.Body)

	require.EqualValues(t, 2, fetches.Load(), "evt_b fetches: the fetch in flight when it arrived may predate its change")
	mu.Lock()
	defer mu.Unlock()
	require.True(t, ran["evt_a"])
	require.True(t, ran["evt_b"], "evt_b's handler runs with the object fetched after it arrived")
}
