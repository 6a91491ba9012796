package idempotencytest

import (
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testCurrentReleaseAddsType: two releases of a service on one store, as
// in a rolling deploy, the new one's OnCurrent call with a type more
// (customer.subscription.paused). While the old release's handler holds
// subscription X, its fetch held at the API, an event of X delivered to
// the new release waits for that lock, then fetches the state that
// changed meanwhile, which is the row's. (Each registration locked a scope
// of its own types joined: the new release's event did not wait, and the
// old release's older fetch was written last.)
func testCurrentReleaseAddsType(t *testing.T, b StoreBackend) {
	testCurrentReleaseAdds(t, b, "customer.subscription.paused")
}

// testCurrentReleaseAdds runs testCurrentReleaseAddsType's deploy with
// added, the type the new release's OnCurrent call has more.
func testCurrentReleaseAdds(t *testing.T, b StoreBackend, added string) {
	cb := newCurrentBench(t, b)
	hs := idempotency.NewHandlers()
	idempotency.OnCurrent(hs, append(slices.Clone(subscriptionEvents), added),
		idempotency.Retrieve(cb.api.client.V1Subscriptions.Retrieve), cb.apply)
	next, err := idempotency.NewHandler(b.Store, hs, cb.hcfg)
	require.NoError(t, err)

	cb.api.set("sub_release", "past_due", 1)
	arrived, release := cb.api.hold("sub_release")
	first := cb.deliverSyncAsync(subscriptionEvent("evt_release_old", subUpdated, "sub_release", "", currentCreated, "past_due"))
	receive(t, arrived, "the old release's fetch")
	cb.api.set("sub_release", "active", 2) // paid while the old release's fetch is in flight
	second := make(chan Answer, 1)
	go func() {
		second <- Deliver(next, subscriptionEvent("evt_release_new", subUpdated, "sub_release", "", currentCreated+1, "active"), currentSecret)
	}()
	waitingReaches(t, b, 1, waitLimit, "the new release's event of the object should wait for the old release's lock")

	close(release)
	a := receive(t, first, "the old release's delivery")
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	a = receive(t, second, "the new release's delivery")
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	cb.requireRow(t, "sub_release", fakeSubscription{"active", 2}, 2)
}
