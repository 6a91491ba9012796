package idempotencytest

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testPruneKeepsKeysOfDeadLetters: the guard an event wrote is kept while
// a different event about the same key, received less than EventIDs after
// it, is dead-lettered in the inbox, whatever the Guards window: its
// attempts before it was dead-lettered are in no window, and its redrive
// must still find the key taken. An event about the invoice comes 44 days
// after its guard was written, fails at its first attempt and, 10 days on,
// at its last; 140 days after the guard, past the least Guards window
// (EventIDs plus DeadLetters, 135 days) but within the dead letter's 90
// days, a prune that deleted the guard let the redrive credit the invoice a
// second time. Once the event is applied, the guard goes.
func testPruneKeepsKeysOfDeadLetters(t *testing.T, b StoreBackend) {
	rs := retentionStore(t, b)
	day := 24 * time.Hour
	var broken atomic.Bool
	ib := newInboxBench(t, b, idempotency.InboxConfig{MaxAttempts: 2}, func(id string, _ int) error {
		if id == "evt_kd_late" && broken.Load() {
			return errDownstream
		}
		return nil
	})
	// One timeline: the inbox's clock reads the wall clock's time, which
	// dates the guards.
	ib.clock.Advance(time.Until(ib.clock.Now()) * -1)
	ib.deliver(t, "evt_kd_first", "invoice.paid", "in_kd", 1756742400, idempotency.OutcomeQueued)
	ib.work(t, 1)
	_, ok, err := b.Store.LookupGuard(ctxT(t), "object-credit", "in_kd")
	require.NoError(t, err)
	require.True(t, ok, "the first event's guard")

	broken.Store(true)
	ib.clock.Advance(44 * day)
	ib.deliver(t, "evt_kd_late", "invoice.payment_succeeded", "in_kd", 1756742401, idempotency.OutcomeQueued)
	ib.work(t, 1)
	ib.clock.Advance(10 * day)
	ib.work(t, 1)
	require.Equal(t, idempotency.InboxDeadLetter, ib.record(t, "evt_kd_late").State)

	// 140 days after the guard, 86 after the dead letter.
	ib.clock.Advance(86 * day)
	rep := prune(t, rs, idempotency.Retention{Guards: keysWindow}, ib.clock.Now())
	require.Zero(t, rep.DeadLetters, "the dead letter is within its window: %+v", rep)
	require.Zero(t, rep.Guards, "the dead letter's key is kept: %+v", rep)
	_, ok, err = b.Store.LookupGuard(ctxT(t), "object-credit", "in_kd")
	require.NoError(t, err)
	require.True(t, ok, "the guard the dead letter needs is kept")

	// The fix is deployed and the dead letter redriven: it finds the
	// invoice credited and credits it no second time.
	broken.Store(false)
	n, err := ib.inbox.Redrive(ctxT(t), idempotency.RedriveFilter{EventIDs: []string{"evt_kd_late"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	ib.work(t, 1)
	require.Equal(t, idempotency.InboxProcessed, ib.record(t, "evt_kd_late").State)
	require.Equal(t, 1, b.Get(t, "c"), "the invoice is credited once")

	// Applied, the event no longer keeps the guard past its window.
	rep = prune(t, rs, idempotency.Retention{Guards: keysWindow}, ib.clock.Now())
	require.Equal(t, 1, rep.Guards, "%+v", rep)
}
