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

// TestOnCurrentRolledBackFetchDoesNotCoverLocally: a fetch whose
// transaction rolled back wrote nothing, so it does not cover, in the
// process's memory of its fetches either, a synchronous delivery that
// arrived before it: that delivery fetches and its handler runs.
func TestOnCurrentRolledBackFetchDoesNotCoverLocally(t *testing.T) {
	t.Parallel()
	var fetches atomic.Int32
	var mu sync.Mutex
	ran := map[string]bool{}
	hs := idempotency.NewHandlers()
	idempotency.OnCurrent(hs, []string{"customer.subscription.updated"},
		func(_ context.Context, id, _ string) (*stripe.Subscription, error) {
			fetches.Add(1)
			return &stripe.Subscription{ID: id, Status: stripe.SubscriptionStatusActive}, nil
		},
		func(_ context.Context, tx idempotency.Tx, _ idempotency.Event[*stripe.Subscription]) error {
			if tx.EventID() == "evt_fails" {
				return errors.New("the write failed")
			}
			mu.Lock()
			defer mu.Unlock()
			ran[tx.EventID()] = true
			return nil
		})
	gate := &gateOneEvent{Store: idempotency.NewMemoryStore(), eventID: "evt_waits", entered: make(chan struct{}), release: make(chan struct{})}
	h, err := idempotency.NewHandler(gate, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)

	waits := make(chan idempotencytest.Answer, 1)
	go func() {
		waits <- idempotencytest.Deliver(h, eventPayload(t, "customer.subscription.updated", "evt_waits", nil), testSecret)
	}()
	<-gate.entered // evt_waits has arrived
	a := idempotencytest.Deliver(h, eventPayload(t, "customer.subscription.updated", "evt_fails", nil), testSecret)
	require.Equal(t, http.StatusInternalServerError, a.Status, a.Body) // fetched after evt_waits arrived, then rolled back
	close(gate.release)
	b := <-waits
	require.Equal(t, http.StatusOK, b.Status, b.Body)
	require.EqualValues(t, 2, fetches.Load(), "evt_waits fetches: the fetch that rolled back wrote nothing")
	mu.Lock()
	defer mu.Unlock()
	require.True(t, ran["evt_waits"], "evt_waits's handler runs")
}
