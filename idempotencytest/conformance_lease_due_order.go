package idempotencytest

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testInboxLeasesLongestDueFirst: when more events are due than a lease
// takes, the lease takes those due the longest first, whether due as
// stored or as an expired lease (a worker that died): an event is not
// passed over by events that came due after it.
func testInboxLeasesLongestDueFirst(t *testing.T, b StoreBackend) {
	ib := newInboxBench(t, b, idempotency.InboxConfig{Workers: 1, Lease: time.Minute, Timeout: 10 * time.Second},
		func(id string, attempt int) error {
			if id == "evt_ldf_x" && attempt == 1 {
				runtime.Goexit() // its worker dies: processing until the lease expires
			}
			return nil
		})
	ib.deliver(t, "evt_ldf_x", "invoice.paid", "in_ldf_x", 1756742400, idempotency.OutcomeQueued)
	ib.workDying(t)
	require.Equal(t, idempotency.InboxProcessing, ib.record(t, "evt_ldf_x").State)

	// Due at +30s, +60s (the lease's end) and +90s; ids in another order.
	ib.clock.Advance(30 * time.Second)
	ib.deliver(t, "evt_ldf_c", "invoice.paid", "in_ldf_c", 1756742400, idempotency.OutcomeQueued)
	ib.clock.Advance(time.Minute)
	ib.deliver(t, "evt_ldf_a", "invoice.paid", "in_ldf_a", 1756742400, idempotency.OutcomeQueued)
	ib.clock.Advance(time.Minute)
	ib.work(t, 3) // one event per lease (Workers: 1)
	require.Equal(t, []string{"evt_ldf_c", "evt_ldf_x", "evt_ldf_a"}, ib.appliedOrder())
}
