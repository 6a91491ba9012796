package idempotencytest

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testPruneKeepsClaimsOfInboxEvents: the claim of an event whose id is
// in the inbox still to be applied (pending) or waiting for a redrive
// (dead_letter) is kept, however old: it is what answers that copy
// duplicate when a worker takes it. A redelivery stored after the first
// copy's inbox row was pruned, whose worker died at its last attempt, is a
// dead letter for Retention.DeadLetters (90 days), and the claim it needs
// would otherwise be pruned after EventIDs (45 days); its redrive then
// applied the event a second time. A claim whose event left the inbox is
// pruned as before.
func testPruneKeepsClaimsOfInboxEvents(t *testing.T, b StoreBackend) {
	rs := retentionStore(t, b)
	var die atomic.Bool
	observer := &idempotency.Observer{Attempt: func(ctx context.Context, rec idempotency.InboxRecord, _ string) (context.Context, func(idempotency.Result)) {
		if rec.EventID == "evt_ci_dead" && rec.State == idempotency.InboxProcessing && die.Load() {
			runtime.Goexit() // the worker dies before its transaction
		}
		return ctx, nil
	}}
	ib := newInboxBench(t, b, idempotency.InboxConfig{MaxAttempts: 1, Observer: observer}, nil)
	// One timeline: the inbox's clock reads the wall clock's time, which
	// dates the claims.
	ib.clock.Advance(time.Until(ib.clock.Now()) * -1)
	for _, id := range []string{"evt_ci_pending", "evt_ci_dead", "evt_ci_gone"} {
		ib.deliver(t, id, "invoice.paid", "in_"+id, 1756742400, idempotency.OutcomeQueued)
	}
	ib.work(t, 3)
	require.ElementsMatch(t, []string{"evt_ci_pending", "evt_ci_dead", "evt_ci_gone"}, ib.appliedOrder())

	// A week on, the finished rows are pruned; the claims stay.
	ib.clock.Advance(8 * 24 * time.Hour)
	rep := prune(t, rs, idempotency.Retention{}, ib.clock.Now())
	require.Equal(t, idempotency.PruneReport{Events: 3}, rep)

	// Two of the events come again (Recover, a resend) and are stored: one
	// waits for a worker, the other's worker dies at its last attempt.
	ib.deliver(t, "evt_ci_dead", "invoice.paid", "in_evt_ci_dead", 1756742400, idempotency.OutcomeQueued)
	die.Store(true)
	ib.workDying(t)
	die.Store(false)
	ib.clock.Advance(time.Hour) // past the dead worker's lease
	ib.work(t, 0)               // finds the lease expired at the last attempt
	ib.deliver(t, "evt_ci_pending", "invoice.paid", "in_evt_ci_pending", 1756742400, idempotency.OutcomeQueued)
	require.Equal(t, idempotency.InboxDeadLetter, ib.record(t, "evt_ci_dead").State)
	require.Equal(t, idempotency.InboxPending, ib.record(t, "evt_ci_pending").State)

	// Past the ledger's window: only the claim of the event that left the
	// inbox goes.
	ib.clock.Advance(38 * 24 * time.Hour)
	rep = prune(t, rs, idempotency.Retention{}, ib.clock.Now())
	require.Equal(t, idempotency.PruneReport{EventIDs: 1}, rep, "only evt_ci_gone's claim")
	_, ok, err := b.Store.LookupEvent(ctxT(t), "evt_ci_gone")
	require.NoError(t, err)
	require.False(t, ok)
	requireEvent(t, b, "evt_ci_pending", idempotency.OutcomeProcessed)
	requireEvent(t, b, "evt_ci_dead", idempotency.OutcomeProcessed)

	// The waiting copy and the redriven one are answered duplicate.
	n, err := ib.inbox.Redrive(ctxT(t), idempotency.RedriveFilter{EventIDs: []string{"evt_ci_dead"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	ib.work(t, 2)
	require.Equal(t, idempotency.InboxProcessed, ib.record(t, "evt_ci_pending").State)
	require.Equal(t, idempotency.InboxProcessed, ib.record(t, "evt_ci_dead").State)
	require.ElementsMatch(t, []string{"evt_ci_pending", "evt_ci_dead", "evt_ci_gone"}, ib.appliedOrder(),
		"no event is applied a second time")
}
