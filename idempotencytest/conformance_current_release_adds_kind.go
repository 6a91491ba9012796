package idempotencytest

import "testing"

// testCurrentReleaseAddsKind: as testCurrentReleaseAddsType, the new
// release's OnCurrent call with a type of a kind of object the old one's
// has not (customer.updated beside the subscription events): an event of
// subscription X delivered to the new release still waits for the old
// release's lock of X, and the state that changed meanwhile is written
// last. (A call locked its kinds joined, "current:customer,customer.subscription"
// against "current:customer.subscription": the new release's event did
// not wait, and the old release's older fetch was written last.)
func testCurrentReleaseAddsKind(t *testing.T, b StoreBackend) {
	testCurrentReleaseAdds(t, b, "customer.updated")
}
