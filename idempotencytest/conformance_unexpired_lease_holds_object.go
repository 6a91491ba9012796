package idempotencytest

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testInboxUnexpiredLeaseHoldsObject: an event whose worker died (its
// transaction rolled back, nothing recorded) stays processing under its
// lease, and until that lease expires no other event of its object is
// leased, not even one created before it that arrived late. Once the lease
// expires, the earlier event goes first, then the retry.
func testInboxUnexpiredLeaseHoldsObject(t *testing.T, b StoreBackend) {
	die := true
	ib := newInboxBench(t, b, idempotency.InboxConfig{Lease: time.Minute, Timeout: 10 * time.Second},
		func(string, int) error {
			if die {
				runtime.Goexit()
			}
			return nil
		})
	ib.deliver(t, "evt_ul_2", "invoice.paid", "in_ul", 1756742402, idempotency.OutcomeQueued)
	ib.workDying(t)
	r := ib.record(t, "evt_ul_2")
	require.Equal(t, idempotency.InboxProcessing, r.State)
	require.Equal(t, 1, r.Attempt)

	die = false
	ib.deliver(t, "evt_ul_1", "invoice.paid", "in_ul", 1756742401, idempotency.OutcomeQueued)
	ib.clock.Advance(59 * time.Second)
	ib.work(t, 0) // the lease of evt_ul_2 still holds its object
	r = ib.record(t, "evt_ul_1")
	require.Equal(t, idempotency.InboxPending, r.State, "not leased while a later event of its object is under an unexpired lease")
	require.Zero(t, r.Attempt)

	ib.clock.Advance(time.Second)
	ib.work(t, 2)
	require.Equal(t, []string{"evt_ul_1", "evt_ul_2"}, ib.appliedOrder())
	r = ib.record(t, "evt_ul_2")
	require.Equal(t, idempotency.InboxProcessed, r.State)
	require.Equal(t, 2, r.Attempt, "the death counted as an attempt")
}
