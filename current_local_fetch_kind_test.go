package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestOnCurrentLocalFetchIsTheEventsKinds: this process's memory of its
// fetches, which spares a delivery that arrived before a committed fetch
// of its object, is kept per kind, as the lock and the fetch record are:
// a fetch of an object of one kind of a call says nothing of an object of
// another kind with the same id. It was kept per call, so an event of
// the other kind that arrived before that fetch was answered processed,
// its object neither fetched nor its func run.
func TestOnCurrentLocalFetchIsTheEventsKinds(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	gate := &gatedStore{Store: store, entered: make(chan struct{}), release: make(chan struct{})}
	hs := idempotency.NewHandlers()
	var mu sync.Mutex
	ran := map[string]int{}
	idempotency.OnCurrent(hs, []string{"custom_a.updated", "custom_b.updated"},
		func(_ context.Context, id, _ string) (map[string]any, error) { return map[string]any{"id": id}, nil },
		func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[map[string]any]) error {
			mu.Lock()
			defer mu.Unlock()
			ran[ev.Type]++
			return nil
		})
	cfg := idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()}
	h, err := idempotency.NewHandler(store, hs, cfg)
	require.NoError(t, err)
	hB, err := idempotency.NewHandler(gate, hs, cfg) // the same store, its deliveries held back
	require.NoError(t, err)
	body := func(id, typ string) []byte {
		return fmt.Appendf(nil, `{"id":%q,"object":"event","type":%q,"api_version":"2025-03-31.basil","created":1756742400,"livemode":false,"pending_webhooks":1,"data":{"object":{"id":"obj_shared","object":"custom"}}}`, id, typ)
	}
	answered := make(chan idempotencytest.Answer, 1)
	go func() { answered <- idempotencytest.Deliver(hB, body("evt_kind_b", "custom_b.updated"), testSecret) }()
	<-gate.entered // arrived before the fetch of the other kind's object
	a := idempotencytest.Deliver(h, body("evt_kind_a", "custom_a.updated"), testSecret)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	close(gate.release)
	b := <-answered
	require.Equal(t, http.StatusOK, b.Status, b.Body)
	require.Equal(t, idempotency.OutcomeProcessed, b.Outcome)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[string]int{"custom_a.updated": 1, "custom_b.updated": 1}, ran, "each kind's object fetched and applied")
}
