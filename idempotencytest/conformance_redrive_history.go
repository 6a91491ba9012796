package idempotencytest

import (
	"context"
	"runtime"
	"sync"
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
// Observer's Attempt gets, the lease's, carries the history its event had
// when leased.
func testInboxRedriveHistory(t *testing.T, b StoreBackend) {
	type history struct {
		redrives int
		at       time.Time
	}
	var fixed atomic.Bool
	var mu sync.Mutex
	observed := map[string][]history{} // by event, each attempt's record
	observer := &idempotency.Observer{Attempt: func(ctx context.Context, rec idempotency.InboxRecord, _ string) (context.Context, func(idempotency.Result)) {
		rec = normalize(rec)
		mu.Lock()
		defer mu.Unlock()
		observed[rec.EventID] = append(observed[rec.EventID], history{rec.Redrives, rec.RedrivenAt})
		return ctx, nil
	}}
	ib := newInboxBench(t, b, idempotency.InboxConfig{MaxAttempts: 1, Observer: observer}, func(id string, _ int) error {
		if fixed.Load() || id == "evt_rh_later" {
			return nil
		}
		return errDownstream
	})
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
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[string][]history{
		"evt_rh_1":     {{}, {1, t1}, {2, t2}, {3, t3}, {4, t4}},
		"evt_rh_2":     {{}, {1, t5}},
		"evt_rh_later": {{}},
	}, observed, "Observer.Attempt's record of each attempt carries the history its event had when leased")
}

// testInboxRedriveHistoryOfExpiredLease: a redriven event whose worker
// dies at its last attempt is dead-lettered by the next lease, whose
// record of it, reported to the Observer's Attempt, carries its redrive
// history as the attempt's own record did.
func testInboxRedriveHistoryOfExpiredLease(t *testing.T, b StoreBackend) {
	type attempt struct {
		state    idempotency.InboxState
		redrives int
		at       time.Time
	}
	var dies atomic.Bool
	var mu sync.Mutex
	var observed []attempt
	observer := &idempotency.Observer{Attempt: func(ctx context.Context, rec idempotency.InboxRecord, _ string) (context.Context, func(idempotency.Result)) {
		rec = normalize(rec)
		mu.Lock()
		defer mu.Unlock()
		observed = append(observed, attempt{rec.State, rec.Redrives, rec.RedrivenAt})
		return ctx, nil
	}}
	ib := newInboxBench(t, b, idempotency.InboxConfig{MaxAttempts: 1, Observer: observer}, func(string, int) error {
		if dies.Load() {
			runtime.Goexit() // the worker dies mid-attempt, its event left processing
		}
		return errDownstream
	})
	ib.deliver(t, "evt_rh_dies", "invoice.paid", "in_rh_dies", 1756742400, idempotency.OutcomeQueued)
	ib.work(t, 1)
	ib.clock.Advance(time.Minute)
	redrivenAt := ib.clock.Now()
	n, err := ib.inbox.Redrive(ctxT(t), idempotency.RedriveFilter{EventIDs: []string{"evt_rh_dies"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)

	dies.Store(true)
	ib.workDying(t)
	ib.clock.Advance(idempotency.DefaultLease + time.Second)
	ib.work(t, 0)
	require.Equal(t, idempotency.InboxDeadLetter, ib.record(t, "evt_rh_dies").State)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []attempt{
		{idempotency.InboxProcessing, 0, time.Time{}},
		{idempotency.InboxProcessing, 1, redrivenAt},
		{idempotency.InboxDeadLetter, 1, redrivenAt},
	}, observed, "the dead-lettering lease's record carries the redrive history")
}
