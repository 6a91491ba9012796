package idempotencytest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testInboxRedriveHistory: each redrive of an event, by ids, type,
// range, object or all, counts in its record's Redrives and sets its
// RedrivenAt to the inbox's clock, in List and HeldBy as in Lookup; an
// event never redriven, or not selected, keeps 0 and zero or what it
// had; a dry run and a refused redrive change nothing; the attempts that
// follow keep the history whatever state they end in. The record an
// Observer's Attempt gets has none, on every store.
func testInboxRedriveHistory(t *testing.T, b StoreBackend) {
	var fixed atomic.Bool
	var observedRedrives atomic.Int64
	observer := &idempotency.Observer{Attempt: func(ctx context.Context, rec idempotency.InboxRecord, _ string) (context.Context, func(idempotency.Result)) {
		observedRedrives.Add(int64(rec.Redrives))
		if !rec.RedrivenAt.IsZero() {
			observedRedrives.Add(1)
		}
		return ctx, nil
	}}
	ib := newInboxBench(t, b, idempotency.InboxConfig{MaxAttempts: 1, Observer: observer}, func(id string, _ int) error {
		if fixed.Load() || id == "evt_rh_later" {
			return nil
		}
		return errDownstream
	})
	type history struct {
		redrives int
		at       time.Time
	}
	histories := func() map[string]history {
		t.Helper()
		recs, err := ib.inbox.List(ctxT(t), idempotency.InboxFilter{})
		require.NoError(t, err)
		out := map[string]history{}
		for _, r := range recs {
			r = normalize(r)
			out[r.EventID] = history{r.Redrives, r.RedrivenAt}
			l := normalize(ib.record(t, r.EventID))
			require.Equal(t, out[r.EventID], history{l.Redrives, l.RedrivenAt}, "Lookup of %s reads as List", r.EventID)
		}
		return out
	}
	redrive := func(f idempotency.RedriveFilter) int {
		t.Helper()
		n, err := ib.inbox.Redrive(ctxT(t), f)
		require.NoError(t, err)
		return n
	}

	t0 := ib.clock.Now()
	ib.deliver(t, "evt_rh_1", "invoice.paid", "in_rh_1", 1756742400, idempotency.OutcomeQueued)
	ib.clock.Advance(time.Minute)
	ib.deliver(t, "evt_rh_2", "invoice.payment_succeeded", "in_rh_2", 1756742400, idempotency.OutcomeQueued)
	ib.work(t, 2) // dead-lettered
	never := map[string]history{"evt_rh_1": {}, "evt_rh_2": {}}
	require.Equal(t, never, histories(), "never redriven")

	require.Equal(t, 2, redrive(idempotency.RedriveFilter{DryRun: true}))
	_, err := ib.inbox.Redrive(ctxT(t), idempotency.RedriveFilter{States: []idempotency.InboxState{idempotency.InboxProcessed}})
	require.ErrorContains(t, err, "RedriveFilter.States")
	require.Equal(t, never, histories(), "a dry run and a refused redrive change nothing")

	ib.clock.Advance(time.Minute)
	t1 := ib.clock.Now()
	require.Equal(t, 1, redrive(idempotency.RedriveFilter{EventIDs: []string{"evt_rh_1"}}))
	want := map[string]history{"evt_rh_1": {1, t1}, "evt_rh_2": {}}
	require.Equal(t, want, histories(), "by id")
	ib.clock.Advance(time.Minute)
	ib.work(t, 1)
	require.Equal(t, idempotency.InboxDeadLetter, ib.record(t, "evt_rh_1").State)
	require.Equal(t, want, histories(), "the attempt and its dead letter keep it")

	ib.clock.Advance(time.Minute)
	t2 := ib.clock.Now()
	require.Equal(t, 1, redrive(idempotency.RedriveFilter{EventType: "invoice.paid"}))
	want["evt_rh_1"] = history{2, t2}
	require.Equal(t, want, histories(), "by type")
	ib.work(t, 1)

	ib.clock.Advance(time.Minute)
	t3 := ib.clock.Now()
	require.Equal(t, 1, redrive(idempotency.RedriveFilter{Since: t0, Until: t0.Add(time.Minute)}))
	want["evt_rh_1"] = history{3, t3}
	require.Equal(t, want, histories(), "by range")
	ib.work(t, 1)

	ib.clock.Advance(time.Minute)
	t4 := ib.clock.Now()
	require.Equal(t, 1, redrive(idempotency.RedriveFilter{ObjectID: "in_rh_1"}))
	want["evt_rh_1"] = history{4, t4}
	ib.deliver(t, "evt_rh_later", "invoice.paid", "in_rh_1", 1756742500, idempotency.OutcomeQueued)
	want["evt_rh_later"] = history{}
	require.Equal(t, want, histories(), "by object")
	_, holders := ib.heldBy(t, "evt_rh_later")
	held := normalize(holders["evt_rh_1"].InboxRecord)
	require.Equal(t, history{4, t4}, history{held.Redrives, held.RedrivenAt}, "HeldBy reads it")

	ib.clock.Advance(time.Minute)
	t5 := ib.clock.Now()
	require.Equal(t, 1, redrive(idempotency.RedriveFilter{}), "all: the dead letter evt_rh_2; evt_rh_1 is pending")
	want["evt_rh_2"] = history{1, t5}
	require.Equal(t, want, histories(), "all")

	fixed.Store(true)
	ib.work(t, 3)
	require.Equal(t, map[idempotency.InboxState]int{idempotency.InboxProcessed: 3}, ib.counts(t))
	require.Equal(t, want, histories(), "applied, each keeps its history")
	require.Zero(t, observedRedrives.Load(), "Observer.Attempt's record has no history")
}
