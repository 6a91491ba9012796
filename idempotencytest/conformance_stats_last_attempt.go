package idempotencytest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testInboxStatsLastAttempt: InboxStats.LastAttempt is when the newest
// attempt the inbox holds a row of started, whatever the row's state:
// zero before any, a failed attempt's start, then a later applied
// attempt's; once Prune deleted the applied event's row, the failed
// one's again (on a store with Prune).
func testInboxStatsLastAttempt(t *testing.T, b StoreBackend) {
	ib := newInboxBench(t, b, idempotency.InboxConfig{Backoff: func(int) time.Duration { return 30 * 24 * time.Hour }},
		func(id string, _ int) error {
			if id == "evt_last_failing" {
				return errDownstream
			}
			return nil
		})
	requireLastAttempt := func(want time.Time, msg string) {
		t.Helper()
		st, err := ib.inbox.Stats(ctxT(t))
		require.NoError(t, err)
		require.True(t, st.LastAttempt.Equal(want), "%s: LastAttempt %s, want %s", msg, st.LastAttempt, want)
	}
	ib.deliver(t, "evt_last_failing", "invoice.paid", "in_last_failing", 1756742400, idempotency.OutcomeQueued)
	requireLastAttempt(time.Time{}, "nothing attempted yet")

	ib.clock.Advance(time.Minute)
	failedAt := ib.clock.Now()
	ib.work(t, 1)
	require.Equal(t, idempotency.InboxFailed, ib.record(t, "evt_last_failing").State)
	requireLastAttempt(failedAt, "the failed attempt")

	ib.deliver(t, "evt_last_applied", "invoice.paid", "in_last_applied", 1756742400, idempotency.OutcomeQueued)
	ib.clock.Advance(time.Minute)
	appliedAt := ib.clock.Now()
	ib.work(t, 1)
	require.Equal(t, idempotency.InboxProcessed, ib.record(t, "evt_last_applied").State)
	requireLastAttempt(appliedAt, "the applied attempt, newer than the failed one")

	rs, ok := b.Store.(RetentionStore)
	if !ok {
		return
	}
	rep := prune(t, rs, idempotency.Retention{}, appliedAt.Add(idempotency.DefaultPayloadRetention+time.Hour))
	require.Equal(t, 1, rep.Events, "the applied event's row is pruned")
	requireLastAttempt(failedAt, "the rows held: the failed event's")
}
