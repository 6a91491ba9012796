package idempotency_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestOnCurrentRolledBackFetchDoesNotCoverLocally: a fetch whose
// transaction rolled back wrote nothing, so it does not cover, in the
// process's memory of its fetches either, a synchronous delivery that
// arrived before it: that delivery fetches and its handler runs.
func TestOnCurrentRolledBackFetchDoesNotCoverLocally(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	subs := onSubscriptionCounted(hs, "evt_fails")
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
	require.EqualValues(t, 2, subs.fetches.Load(), "evt_waits fetches: the fetch that rolled back wrote nothing")
	require.True(t, subs.ran("evt_waits"), "evt_waits's handler runs")
}
