package idempotencytest

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testInboxCrashLoopSparesOthers: an event whose handler kills its
// process every time (a fatal error recover cannot catch) takes down with
// it, the first time, the events its process had leased with it. Each of
// them is then leased again alone, as the event whose worker died is, so
// that the poison event dies alone from then on: it reaches dead letter
// after MaxAttempts, and the others are applied, each once, instead of
// being dead-lettered with it. While it loops, its record says why.
func testInboxCrashLoopSparesOthers(t *testing.T, b StoreBackend) {
	const maxAttempts = 3
	ib := newInboxBench(t, b, idempotency.InboxConfig{Workers: 4, MaxAttempts: maxAttempts, Lease: time.Minute, Timeout: 10 * time.Second},
		func(id string, _ int) error {
			if id == "evt_cl_a_poison" {
				runtime.Goexit() // the process dies, and every event it leased is left processing
			}
			return nil
		})
	innocent := []string{"evt_cl_b", "evt_cl_c", "evt_cl_d"}
	ib.deliver(t, "evt_cl_a_poison", "invoice.paid", "in_cl_a", 1756742400, idempotency.OutcomeQueued)
	for _, id := range innocent {
		ib.deliver(t, id, "invoice.paid", "in_"+id, 1756742400, idempotency.OutcomeQueued)
	}
	ib.workDying(t) // one lease takes all four, the poison first
	for _, id := range innocent {
		r := ib.record(t, id)
		require.Equal(t, idempotency.InboxProcessing, r.State, "%s was leased with the poison event", id)
		require.Equal(t, 1, r.Attempt)
	}

	// The supervisor restarts the process at once; the leases expire.
	for i := range maxAttempts + 1 {
		ib.clock.Advance(time.Minute)
		ib.workDying(t)
		if i == 0 {
			// While it loops, the event being applied says why it is
			// applied again: an operator looking at it sees the crashes.
			r := ib.record(t, "evt_cl_a_poison")
			require.Equal(t, idempotency.InboxProcessing, r.State)
			require.Equal(t, 2, r.Attempt)
			require.Equal(t, "lease expired after attempt 1: its worker died, hung or lost its connection, or the clocks of the replicas disagree", r.LastError)
		}
	}
	r := ib.record(t, "evt_cl_a_poison")
	require.Equal(t, idempotency.InboxDeadLetter, r.State)
	require.Equal(t, maxAttempts, r.Attempt)
	require.Contains(t, r.LastError, "lease expired after attempt 3")
	for _, id := range innocent {
		r := ib.record(t, id)
		require.Equal(t, idempotency.InboxProcessed, r.State, "%s: %s", id, r.LastError)
		require.Equal(t, 2, r.Attempt, "%s: the first death counted, and no other", id)
	}
	require.Equal(t, len(innocent), b.Get(t, "c"), "each applied once")
}
