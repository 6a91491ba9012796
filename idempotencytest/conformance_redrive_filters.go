package idempotencytest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testInboxRedriveFilters: Redrive selects by type and by the time the
// event was received, Since included and Until left out; a dry run moves
// nothing; a redriven event, dead-lettered or failed, is pending, due now,
// with a fresh budget, no longer finished, and its last error kept.
func testInboxRedriveFilters(t *testing.T, b StoreBackend) {
	ib := newInboxBench(t, b, idempotency.InboxConfig{MaxAttempts: 2, Backoff: func(int) time.Duration { return time.Hour }},
		func(string, int) error { return errDownstream })
	t0 := ib.clock.Now()
	ib.deliver(t, "evt_rf_1", "invoice.paid", "in_rf_1", 1756742400, idempotency.OutcomeQueued)
	ib.clock.Advance(time.Minute)
	ib.deliver(t, "evt_rf_2", "invoice.paid", "in_rf_2", 1756742400, idempotency.OutcomeQueued)
	ib.clock.Advance(time.Minute)
	ib.deliver(t, "evt_rf_3", "invoice.payment_succeeded", "in_rf_3", 1756742400, idempotency.OutcomeQueued)
	ib.clock.Advance(time.Minute)
	ib.work(t, 3) // attempt 1 of each: failed
	ib.clock.Advance(time.Hour)
	ib.work(t, 3) // attempt 2: dead letter
	require.Equal(t, map[idempotency.InboxState]int{idempotency.InboxDeadLetter: 3}, ib.counts(t))

	redrive := func(f idempotency.RedriveFilter) int {
		t.Helper()
		n, err := ib.inbox.Redrive(ctxT(t), f)
		require.NoError(t, err)
		return n
	}
	require.Equal(t, 1, redrive(idempotency.RedriveFilter{Since: t0.Add(time.Minute), Until: t0.Add(2 * time.Minute), DryRun: true}),
		"received at Since is selected, at Until is not")
	require.Equal(t, 2, redrive(idempotency.RedriveFilter{Until: t0.Add(2 * time.Minute), DryRun: true}))
	require.Equal(t, 2, redrive(idempotency.RedriveFilter{Since: t0.Add(time.Minute), DryRun: true}))
	require.Equal(t, map[idempotency.InboxState]int{idempotency.InboxDeadLetter: 3}, ib.counts(t), "a dry run moves nothing")

	require.Equal(t, 1, redrive(idempotency.RedriveFilter{EventType: "invoice.payment_succeeded"}))
	r := normalize(ib.record(t, "evt_rf_3"))
	require.Equal(t, idempotency.InboxPending, r.State)
	require.Zero(t, r.Attempt)
	require.Equal(t, ib.clock.Now(), r.NextAttemptAt)
	require.True(t, r.FinishedAt.IsZero(), "no longer finished: %s", r.FinishedAt)
	require.Contains(t, r.LastError, errDownstream.Error(), "the last error is kept")
	require.Equal(t, 1, redrive(idempotency.RedriveFilter{Since: t0.Add(time.Minute)}), "evt_rf_3 is pending already")
	require.Equal(t, idempotency.InboxDeadLetter, ib.record(t, "evt_rf_1").State)

	ib.work(t, 2) // evt_rf_2, evt_rf_3 fail again: failed, due in an hour
	r = normalize(ib.record(t, "evt_rf_2"))
	require.Equal(t, idempotency.InboxFailed, r.State)
	require.Equal(t, ib.clock.Now().Add(time.Hour), r.NextAttemptAt)
	require.Equal(t, 1, redrive(idempotency.RedriveFilter{DryRun: true}), "dead_letter by default: evt_rf_1 only")
	require.Equal(t, 2, redrive(idempotency.RedriveFilter{States: []idempotency.InboxState{idempotency.InboxFailed}, Since: t0.Add(time.Minute)}))
	r = normalize(ib.record(t, "evt_rf_2"))
	require.Equal(t, idempotency.InboxPending, r.State)
	require.Zero(t, r.Attempt)
	require.Equal(t, ib.clock.Now(), r.NextAttemptAt, "due now, not after the failed attempt's backoff")
	ib.work(t, 2)
}
