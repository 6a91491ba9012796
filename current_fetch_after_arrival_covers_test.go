package idempotency_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestOnCurrentFetchAfterArrivalCoversLocally: a synchronous delivery
// that arrived, then waited to reach its store (as for a pooled
// connection) while another event's fetch of its object started and
// committed, is covered by that fetch in the process: it takes its number
// on the store's counter after the fetch's, yet it fetches nothing and
// its handler does not run, on both stores. (No test failed when the
// delivery's arrival was not passed to the claim, and every such delivery
// fetched again.)
func TestOnCurrentFetchAfterArrivalCoversLocally(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hs := idempotency.NewHandlers()
			subs := onSubscriptionCounted(hs, "")
			gate := &gateOneEvent{Store: store, eventID: "evt_cover_b", entered: make(chan struct{}), release: make(chan struct{})}
			h, err := idempotency.NewHandler(gate, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)

			toB := make(chan idempotencytest.Answer, 1)
			go func() {
				toB <- idempotencytest.Deliver(h, eventPayload(t, "customer.subscription.updated", "evt_cover_b", nil), testSecret)
			}()
			<-gate.entered // evt_cover_b has arrived and waits to reach its store
			a := idempotencytest.Deliver(h, eventPayload(t, "customer.subscription.updated", "evt_cover_a", nil), testSecret)
			require.Equal(t, http.StatusOK, a.Status, a.Body)
			require.EqualValues(t, 1, subs.fetches.Load())
			close(gate.release)
			b := <-toB
			require.Equal(t, http.StatusOK, b.Status, b.Body)
			require.Equal(t, idempotency.OutcomeProcessed, b.Outcome)

			require.EqualValues(t, 1, subs.fetches.Load(), "evt_cover_a's fetch started after evt_cover_b arrived and covers it")
			require.True(t, subs.ran("evt_cover_a"))
			require.False(t, subs.ran("evt_cover_b"), "the state evt_cover_a's handler wrote includes evt_cover_b's change")
		})
	}
}

// subscriptionRuns counts the fetches of an OnCurrent handler of
// customer.subscription.updated and notes the events its handler ran for.
type subscriptionRuns struct {
	fetches atomic.Int32
	mu      sync.Mutex
	ranFor  map[string]bool
}

// onSubscriptionCounted registers in hs an OnCurrent handler of
// customer.subscription.updated whose fetch answers an active subscription
// and whose handler fails the event failing and notes every other.
func onSubscriptionCounted(hs *idempotency.Handlers, failing string) *subscriptionRuns {
	r := &subscriptionRuns{ranFor: map[string]bool{}}
	idempotency.OnCurrent(hs, []string{"customer.subscription.updated"},
		func(_ context.Context, id, _ string) (*stripe.Subscription, error) {
			r.fetches.Add(1)
			return &stripe.Subscription{ID: id, Status: stripe.SubscriptionStatusActive}, nil
		},
		func(_ context.Context, tx idempotency.Tx, _ idempotency.Event[*stripe.Subscription]) error {
			if tx.EventID() == failing {
				return errors.New("the write failed")
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			r.ranFor[tx.EventID()] = true
			return nil
		})
	return r
}

// ran reports whether the handler ran for eventID.
func (r *subscriptionRuns) ran(eventID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ranFor[eventID]
}
