package idempotency_test

import (
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestOnCurrentHoldsNoStore: what an OnCurrent registration remembers of
// this process's fetches keeps no store: one Handlers shared by many
// tests, each with a store and a Handler of its own, keeps none of the
// stores that are gone, nor what they hold. Both stores (PgxStores on one
// database's pool).
func TestOnCurrentHoldsNoStore(t *testing.T) {
	t.Parallel()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		requireStoresCollected(t, idempotency.NewMemoryStore)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		b := newPgBackend(t, idempotency.PgxConfig{})
		requireStoresCollected(t, func() *idempotency.PgxStore {
			store, err := idempotency.NewPgxStore(b.db.Pool, idempotency.PgxConfig{Schema: b.db.Schema})
			require.NoError(t, err)
			return store
		})
	})
}

// requireStoresCollected delivers an event whose object OnCurrent fetches
// to each of several stores that newStore makes, through one Handlers, and
// requires that every store is collected once no longer in use.
func requireStoresCollected[S any](t *testing.T, newStore func() *S) {
	t.Helper()
	hs := idempotency.NewHandlers()
	subs := onSubscriptionCounted(hs, "")
	const stores = 20
	gone := make([]weak.Pointer[S], stores)
	for i := range stores {
		store := newStore()
		gone[i] = weak.Make(store)
		h, err := idempotency.NewHandler(any(store).(idempotency.Store), hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
		require.NoError(t, err)
		a := idempotencytest.Deliver(h, eventPayload(t, "customer.subscription.updated", fmt.Sprintf("evt_held_%d", i), nil), testSecret)
		require.Equal(t, http.StatusOK, a.Status, a.Body)
	}
	require.EqualValues(t, stores, subs.fetches.Load(), "each store's delivery fetched its object")
	// Polled, with a collection each time: not a synchronisation. A
	// minute: under -race beside the package's other tests on a loaded
	// machine, a collection of their heap can take seconds.
	require.Eventually(t, func() bool {
		runtime.GC()
		return !slices.ContainsFunc(gone, func(p weak.Pointer[S]) bool { return p.Value() != nil })
	}, time.Minute, 10*time.Millisecond, "the stores no longer in use are collected")
	runtime.KeepAlive(hs)
}
