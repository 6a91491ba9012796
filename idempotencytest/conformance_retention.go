package idempotencytest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// RetentionStore is a store that prunes and forgets: MemoryStore and
// PgxStore. RunStoreTests runs the retention cases on a StoreBackend
// whose Store is one.
type RetentionStore interface {
	idempotency.Pruner
	Forget(ctx context.Context, eventID string) (bool, error)
}

// retentionTests are the guarantees of Prune and Forget.
var retentionTests = []struct {
	name string
	fn   func(t *testing.T, b StoreBackend)
}{
	{"PruneKeepsWhatEachRuleKeeps", testPruneRules},
	{"PruneRefusesUnsafeSettings", testPruneRefuses},
	{"PruneInBatches", testPruneBatches},
	{"ForgetLetsAnEventApplyAgain", testForget},
	{"PruneObjectsNotFetchedSince", testPruneObjects},
	{"PrunePassesOverHeldRecords", testPruneHeldRecords},
	{"PruneKeepsUnfinishedEvents", testPruneKeepsUnfinished},
	{"PruneWalksKeysInBatches", testPruneWalksKeys},
	{"PruneTasksByTheirWindows", testPruneTasks},
	{"PruneKeepsClaimsOfInboxEvents", testPruneKeepsClaimsOfInboxEvents},
	{"PruneKeepsDeadTaskKeys", testPruneKeepsDeadTaskKeys},
	{"PruneKeepsKeysOfDeadLetters", testPruneKeepsKeysOfDeadLetters},
	{"PruneTaskWindows", testPruneTaskWindows},
	{"PruneClearsTaskArgs", testPruneClearsTaskArgs},
	{"PruneDryRunCountsWhatPruneDeletes", testPruneDryRun},
}

// keysWindow is the least window Retention accepts for guards and tasks
// with the other windows at their defaults.
const keysWindow = idempotency.DefaultEventIDRetention + idempotency.DefaultDeadLetterRetention

func retentionStore(t *testing.T, b StoreBackend) RetentionStore {
	t.Helper()
	rs, ok := b.Store.(RetentionStore)
	if !ok {
		t.Skipf("%T has no Prune and Forget", b.Store)
	}
	return rs
}

// prune runs a prune measured at now and returns its report.
func prune(t *testing.T, rs RetentionStore, r idempotency.Retention, now time.Time) idempotency.PruneReport {
	t.Helper()
	r.Now = func() time.Time { return now }
	rep, err := rs.Prune(ctxT(t), r)
	require.NoError(t, err)
	return rep
}

// testPruneRules: each kind of row goes when its window has passed and
// not before; a redelivery of an event whose inbox row was pruned is
// stored again but not applied again, its claim answers for it; guards
// and tasks stay unless a window is set.
func testPruneRules(t *testing.T, b StoreBackend) {
	rs := retentionStore(t, b)
	ib := newInboxBench(t, b, idempotency.InboxConfig{MaxAttempts: 1}, func(id string, _ int) error {
		if id == "evt_r_dead" {
			return errDownstream
		}
		return nil
	})
	ib.deliver(t, "evt_r_done", "invoice.paid", "in_r_done", 1756742400, idempotency.OutcomeQueued)
	ib.deliver(t, "evt_r_dead", "invoice.paid", "in_r_dead", 1756742400, idempotency.OutcomeQueued)
	ib.deliver(t, "evt_r_skip", "checkout.session.completed", "cs_r", 1756742400, idempotency.OutcomeQueued)
	ib.deliver(t, "evt_r_ign", "customer.created", "cus_r", 1756742400, idempotency.OutcomeIgnored)
	ib.deliver(t, "evt_r_new", "invoice.paid", "in_r_new", 1756742401, idempotency.OutcomeQueued)
	ib.work(t, 4)
	require.Equal(t, 2, b.Get(t, "c"))

	payload, ok, err := ib.inbox.Payload(ctxT(t), "evt_r_done")
	require.NoError(t, err)
	require.True(t, ok)
	require.JSONEq(t, string(inboxEvent("evt_r_done", "invoice.paid", "in_r_done", 1756742400)), string(payload), "the payload as delivered")

	// The inbox's times are the fake clock's; the ledger's are the store's.
	start := ib.clock.Now()
	rep := prune(t, rs, idempotency.Retention{}, start.Add(6*24*time.Hour))
	require.Zero(t, rep.Total(), "nothing is a week old yet: %+v", rep)

	ib.deliver(t, "evt_r_late", "invoice.paid", "in_r_late", 1756742402, idempotency.OutcomeQueued)
	ib.clock.Advance(7 * 24 * time.Hour)
	ib.work(t, 1)
	rep = prune(t, rs, idempotency.Retention{}, start.Add(8*24*time.Hour))
	require.Equal(t, idempotency.PruneReport{Events: 4}, rep, "events finished a week ago go; the one finished since, the dead letter and the ledger stay")
	require.Equal(t, idempotency.InboxProcessed, ib.record(t, "evt_r_late").State)
	for _, id := range []string{"evt_r_done", "evt_r_skip", "evt_r_ign", "evt_r_new"} {
		_, ok, err := ib.inbox.Lookup(ctxT(t), id)
		require.NoError(t, err)
		require.False(t, ok, "%s is pruned from the inbox", id)
	}
	_, ok, err = ib.inbox.Payload(ctxT(t), "evt_r_done")
	require.NoError(t, err)
	require.False(t, ok, "its payload with it")
	require.Equal(t, idempotency.InboxDeadLetter, ib.record(t, "evt_r_dead").State)
	requireEvent(t, b, "evt_r_done", idempotency.OutcomeProcessed)

	// A redelivery now is stored again, and its claim stops it.
	before := b.Get(t, "c")
	ib.deliver(t, "evt_r_done", "invoice.paid", "in_r_done", 1756742400, idempotency.OutcomeQueued)
	ib.work(t, 1)
	require.Equal(t, idempotency.InboxProcessed, ib.record(t, "evt_r_done").State)
	require.Equal(t, before, b.Get(t, "c"), "evt_r_done is not applied again")

	rep = prune(t, rs, idempotency.Retention{}, start.Add(91*24*time.Hour))
	require.Equal(t, 1, rep.DeadLetters, "%+v", rep)
	require.Zero(t, rep.EventIDs, "the ledger keeps ids 45 days from when they were claimed")
	_, ok, err = ib.inbox.Lookup(ctxT(t), "evt_r_dead")
	require.NoError(t, err)
	require.False(t, ok)

	// The ledger's window is measured on the store's own times.
	later := time.Now().Add(46 * 24 * time.Hour)
	rep = prune(t, rs, idempotency.Retention{}, later)
	require.Equal(t, 4, rep.EventIDs, "%+v", rep) // done, skip, new, late: the ignored one was never claimed
	_, ok, err = b.Store.LookupEvent(ctxT(t), "evt_r_done")
	require.NoError(t, err)
	require.False(t, ok, "the claim is pruned")
	_, ok, err = b.Store.LookupGuard(ctxT(t), "object-credit", "in_r_done")
	require.NoError(t, err)
	require.True(t, ok, "guards are kept unless a window is set")

	// The least window of guards: the event ids' and the dead letters'.
	rep = prune(t, rs, idempotency.Retention{Guards: 52 * 24 * time.Hour, DeadLetters: 7 * 24 * time.Hour}, later.Add(7*24*time.Hour))
	require.Equal(t, 3, rep.Guards, "%+v", rep) // in_r_done, in_r_new, in_r_late
	_, ok, err = b.Store.LookupGuard(ctxT(t), "object-credit", "in_r_done")
	require.NoError(t, err)
	require.False(t, ok)
}

// testPruneRefuses: a setting that breaks a rule is refused, naming it,
// and nothing is deleted.
func testPruneRefuses(t *testing.T, b StoreBackend) {
	rs := retentionStore(t, b)
	_, err := b.Store.Run(ctxT(t), idempotency.Claim{EventID: "evt_keep", EventType: "invoice.paid"}, addOne(b, "c"))
	require.NoError(t, err)
	far := time.Now().Add(365 * 24 * time.Hour)
	day := 24 * time.Hour
	for _, c := range []struct {
		r    idempotency.Retention
		want string
	}{
		{idempotency.Retention{EventIDs: 30 * day}, "Retention.EventIDs"},
		{idempotency.Retention{EventIDs: time.Nanosecond}, "recovery"},
		{idempotency.Retention{Payloads: -day}, "Retention.Payloads"},
		{idempotency.Retention{Payloads: 30 * day, DeadLetters: 10 * day}, "Retention.DeadLetters"},
		{idempotency.Retention{Guards: 44 * day}, "Retention.Guards"},
		{idempotency.Retention{EventIDs: 60 * day, Guards: 50 * day}, "as long as the event ids"},
		{idempotency.Retention{Guards: 134 * day}, "the dead letters"},
		{idempotency.Retention{DeadLetters: 10 * day, Tasks: 54 * day}, "Retention.Tasks"},
		{idempotency.Retention{Tasks: day}, "Retention.Tasks"},
		{idempotency.Retention{BatchSize: -1}, "Retention.BatchSize"},
	} {
		c.r.Now = func() time.Time { return far }
		rep, err := rs.Prune(ctxT(t), c.r)
		require.ErrorContains(t, err, c.want, "%+v", c.r)
		require.Zero(t, rep.Total())
	}
	requireEvent(t, b, "evt_keep", idempotency.OutcomeProcessed)
}

// testPruneBatches: a prune deletes in batches, reporting each; a
// cancelled context stops it between batches with what was done.
func testPruneBatches(t *testing.T, b StoreBackend) {
	rs := retentionStore(t, b)
	const n = 7
	for i := range n {
		_, err := b.Store.Run(ctxT(t), idempotency.Claim{EventID: "evt_batch_" + string(rune('a'+i)), EventType: "invoice.paid"}, nil)
		require.NoError(t, err)
	}
	var seen []int
	ctx, cancel := context.WithCancel(ctxT(t))
	r := idempotency.Retention{BatchSize: 2, Now: func() time.Time { return time.Now().Add(46 * 24 * time.Hour) }}
	r.OnBatch = func(rep idempotency.PruneReport) {
		seen = append(seen, rep.EventIDs)
		if len(seen) == 2 {
			cancel()
		}
	}
	rep, err := rs.Prune(ctx, r)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, []int{2, 4}, seen, "one report per batch, with the totals")
	require.Equal(t, 4, rep.EventIDs, "the report says what was committed")
	left, err := b.Store.ListEvents(ctxT(t), idempotency.EventFilter{})
	require.NoError(t, err)
	require.Len(t, left, n-4)

	seen = nil
	r.OnBatch = func(rep idempotency.PruneReport) { seen = append(seen, rep.EventIDs) }
	rep, err = rs.Prune(ctxT(t), r)
	require.NoError(t, err)
	require.Equal(t, []int{2, 3}, seen)
	require.Equal(t, idempotency.PruneReport{EventIDs: 3}, rep)
}

// testForget: a forgotten event is applied again when it comes next, in
// inbox mode and synchronous mode, by the process that forgot it, and
// CheckOrder finds it newest again; an event still to be applied is
// refused; an unknown one reports false.
func testForget(t *testing.T, b StoreBackend) {
	rs := retentionStore(t, b)
	ib := newInboxBench(t, b, idempotency.InboxConfig{}, nil)
	ib.deliver(t, "evt_f", "invoice.paid", "in_f", 1756742400, idempotency.OutcomeQueued)
	ib.deliver(t, "evt_f_wait", "invoice.paid", "in_f_wait", 1756742400, idempotency.OutcomeQueued)
	ib.work(t, 2)
	ib.deliver(t, "evt_f_pending", "invoice.paid", "in_f_pending", 1756742400, idempotency.OutcomeQueued)
	require.Equal(t, 2, b.Get(t, "c"))

	_, err := ib.inbox.Forget(ctxT(t), "evt_f_pending")
	require.ErrorIs(t, err, idempotency.ErrUnfinished)
	require.Equal(t, idempotency.InboxPending, ib.record(t, "evt_f_pending").State, "a refused forget changes nothing")

	found, err := ib.inbox.Forget(ctxT(t), "evt_f")
	require.NoError(t, err)
	require.True(t, found)
	_, ok, err := b.Store.LookupEvent(ctxT(t), "evt_f")
	require.NoError(t, err)
	require.False(t, ok, "the claim is gone")
	_, ok, err = b.Store.LookupGuard(ctxT(t), "object-credit", "in_f")
	require.NoError(t, err)
	require.False(t, ok, "the guards its transaction claimed are gone")
	_, ok, err = b.Store.LookupGuard(ctxT(t), "object-credit", "in_f_wait")
	require.NoError(t, err)
	require.True(t, ok, "other events' guards stay")

	ib.deliver(t, "evt_f", "invoice.paid", "in_f", 1756742400, idempotency.OutcomeQueued)
	ib.work(t, 2)
	require.Equal(t, 4, b.Get(t, "c"), "the forgotten event applied again, the pending one once")

	found, err = rs.Forget(ctxT(t), "evt_never")
	require.NoError(t, err)
	require.False(t, found)
	// An id no event can have is bad input, not an unknown event.
	for _, id := range []string{"", "evt_\x00", "evt_\xff", "evt_" + strings.Repeat("x", 1100)} {
		_, err := rs.Forget(ctxT(t), id)
		require.ErrorIs(t, err, idempotency.ErrInvalidKey, "Forget(%q)", id)
	}

	// Synchronous mode: the duplicate is answered from the ledger (or the
	// store's memory of it) until the event is forgotten.
	hs := idempotency.NewHandlers()
	var orders []idempotency.Order
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[inboxObject]) error {
		o, err := idempotency.CheckOrder(ctx, tx, "forget-order", ev.Object.ID, ev.Created)
		if err != nil {
			return err
		}
		tx.AfterCommit(func(context.Context) { orders = append(orders, o) })
		return b.Add(ctx, tx, "sync", 1)
	})
	h, err := idempotency.NewHandler(b.Store, hs, idempotency.Config{Secrets: []string{inboxSecret}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	body := inboxEvent("evt_f_sync", "invoice.paid", "in_f_sync", 1756742400)
	for i, want := range []idempotency.Outcome{idempotency.OutcomeProcessed, idempotency.OutcomeDuplicate} {
		a := Deliver(h, body, inboxSecret)
		require.Equal(t, http.StatusOK, a.Status)
		require.Equal(t, want, a.Outcome, "delivery %d", i+1)
	}
	found, err = rs.Forget(ctxT(t), "evt_f_sync")
	require.NoError(t, err)
	require.True(t, found)
	a := Deliver(h, body, inboxSecret)
	require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, "applied again after Forget")
	require.Equal(t, 2, b.Get(t, "sync"))
	require.Equal(t, []idempotency.Order{idempotency.OrderNewer, idempotency.OrderNewer}, orders,
		"CheckOrder's record stays, and the event applied again is still the newest for its key")
	// OrderNewer is also the answer when there is no record, so the above
	// does not show that the record stayed: an event a second older than
	// the forgotten one does, found older only against the record.
	forgotten := time.Unix(1756742400, 0)
	var older idempotency.Order
	_, err = b.Store.Run(ctxT(t), idempotency.Claim{EventID: "evt_f_sync_older", EventType: "invoice.paid"}, func(ctx context.Context, tx idempotency.Tx) error {
		o, err := idempotency.CheckOrder(ctx, tx, "forget-order", "in_f_sync", forgotten.Add(-time.Second))
		older = o
		return err
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.OrderOlder, older, "Forget keeps CheckOrder's record of the forgotten event")

	// Another event of the forgotten one's second, its id sorting first,
	// ties with it; after that, either of the two applied again after
	// Forget ties too, whichever id sorts first: neither payload can be
	// trusted to be the later state.
	sameSecond := func(id string) idempotency.Order {
		t.Helper()
		var o idempotency.Order
		_, err := b.Store.Run(ctxT(t), idempotency.Claim{EventID: id, EventType: "invoice.paid"}, func(ctx context.Context, tx idempotency.Tx) error {
			var err error
			o, err = idempotency.CheckOrder(ctx, tx, "forget-order", "in_f_sync", forgotten)
			return err
		})
		require.NoError(t, err)
		return o
	}
	require.Equal(t, idempotency.OrderTie, sameSecond("evt_f_a"), "another event of the same second")
	found, err = rs.Forget(ctxT(t), "evt_f_sync")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, idempotency.OutcomeProcessed, Deliver(h, body, inboxSecret).Outcome)
	require.Equal(t, idempotency.OrderTie, orders[len(orders)-1],
		"applied again after Forget, with another event of its second applied since")
	found, err = rs.Forget(ctxT(t), "evt_f_a")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, idempotency.OrderTie, sameSecond("evt_f_a"), "the other one applied again after Forget")
}

// testPruneTasks: finished tasks are kept unless Retention.Tasks is
// set, and then go when it has passed since they finished; a
// dead-lettered task is counted with the dead letters, and goes when the
// keys' window (EventIDs plus DeadLetters, or Tasks when longer) has
// passed since it was dead-lettered.
func testPruneTasks(t *testing.T, b StoreBackend) {
	rs := retentionStore(t, b)
	tb := newTaskBench(t, b, idempotency.InboxConfig{Backoff: minuteBackoff})
	tb.provider.setAnswer(func(c providerCall) error {
		if c.Key == "in_tp_dead" {
			return &providerError{Status: http.StatusBadRequest} // Permanent
		}
		return nil
	})
	start := tb.clock.Now()
	tb.deliver(t, viaHandler, "evt_tp_done", "invoice.paid", "in_tp_done", http.StatusOK, idempotency.OutcomeProcessed)
	tb.deliver(t, viaHandler, "evt_tp_dead", "invoice.paid", "in_tp_dead", http.StatusOK, idempotency.OutcomeProcessed)
	tb.work(t, 2)
	tb.work(t, 0)
	done, dead := tb.task(t, "in_tp_done"), tb.task(t, "in_tp_dead")
	require.Equal(t, idempotency.InboxProcessed, done.State)
	require.Equal(t, idempotency.InboxDeadLetter, dead.State)
	require.Equal(t, start, done.FinishedAt, "finished on the inbox's clock")
	require.Equal(t, start, dead.FinishedAt)
	doneID, deadID := tb.receipt.ID("in_tp_done"), tb.receipt.ID("in_tp_dead")
	tasks := func() []string {
		t.Helper()
		return listIDs(t, tb.inbox, idempotency.InboxFilter{Kind: idempotency.KindTask})
	}
	require.ElementsMatch(t, []string{doneID, deadID}, tasks())

	tb.clock.Advance(46 * 24 * time.Hour)
	rep := prune(t, rs, idempotency.Retention{}, tb.clock.Now())
	require.Zero(t, rep.Tasks, "finished tasks are kept unless a window is set: %+v", rep)
	require.Zero(t, rep.DeadLetters, "the dead letter is younger than 90 days: %+v", rep)
	require.ElementsMatch(t, []string{doneID, deadID}, tasks(), "both tasks are kept")

	tb.clock.Advance(45 * 24 * time.Hour) // 91 days since they finished
	rep = prune(t, rs, idempotency.Retention{}, tb.clock.Now())
	require.Zero(t, rep.DeadLetters+rep.Tasks, "the dead-lettered task is its key's record, kept with the keys: %+v", rep)
	require.ElementsMatch(t, []string{doneID, deadID}, tasks(), "both tasks are kept")

	tb.clock.Advance(45 * 24 * time.Hour) // 136 days
	rep = prune(t, rs, idempotency.Retention{}, tb.clock.Now())
	require.Equal(t, 1, rep.DeadLetters, "the dead-lettered task is counted with the dead letters, after the keys' window: %+v", rep)
	require.Zero(t, rep.Tasks, "%+v", rep)
	require.Equal(t, []string{doneID}, tasks(), "the dead letter is gone, the processed task stays")
	_, ok, err := tb.inbox.Lookup(ctxT(t), deadID)
	require.NoError(t, err)
	require.False(t, ok)

	rep = prune(t, rs, idempotency.Retention{Tasks: keysWindow}, tb.clock.Now())
	require.Equal(t, 1, rep.Tasks, "the processed task finished 136 days ago: %+v", rep)
	require.Zero(t, rep.DeadLetters, "%+v", rep)
	require.Empty(t, tasks())
}

// testPruneKeepsUnfinished: however old, an event still to be applied —
// pending, failed, processing under a worker, or a dead letter redriven
// to pending — is neither pruned nor forgotten (Forget refuses at once,
// even while an attempt is in its transaction), and is applied once
// afterwards.
func testPruneKeepsUnfinished(t *testing.T, b StoreBackend) {
	rs := retentionStore(t, b)
	entered, release := make(chan struct{}), make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce) // a failure below must not leave the attempt holding its transaction
	ib := newInboxBench(t, b, idempotency.InboxConfig{MaxAttempts: 3, Workers: 1}, func(id string, attempt int) error {
		switch {
		case id == "evt_u_busy":
			close(entered)
			<-release
		case id == "evt_u_failed" && attempt == 1, id == "evt_u_redriven" && attempt <= 3:
			return errDownstream
		}
		return nil
	})
	ib.deliver(t, "evt_u_redriven", "invoice.paid", "in_u_redriven", 1756742400, idempotency.OutcomeQueued)
	for range 3 {
		ib.work(t, 1)
		ib.clock.Advance(time.Hour)
	}
	require.Equal(t, idempotency.InboxDeadLetter, ib.record(t, "evt_u_redriven").State)
	ib.deliver(t, "evt_u_failed", "invoice.paid", "in_u_failed", 1756742400, idempotency.OutcomeQueued)
	ib.work(t, 1)
	n, err := ib.inbox.Redrive(ctxT(t), idempotency.RedriveFilter{EventIDs: []string{"evt_u_redriven"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	// Back in time: of what follows, only the two new events are due, the
	// one the worker will hold first.
	ib.clock.Advance(-2 * time.Hour)
	ib.deliver(t, "evt_u_busy", "invoice.paid", "in_u_busy", 1756742400, idempotency.OutcomeQueued)
	ib.clock.Advance(time.Second)
	ib.deliver(t, "evt_u_pending", "invoice.paid", "in_u_pending", 1756742400, idempotency.OutcomeQueued)
	type workedDue struct {
		n   int
		err error
	}
	worked := make(chan workedDue, 1)
	go func() {
		n, err := ib.inbox.WorkDue(ctxT(t))
		worked <- workedDue{n, err}
	}()
	receive(t, entered, "evt_u_busy's handler") // processing, its handler in its transaction

	far := time.Now().Add(10 * 365 * 24 * time.Hour)
	rep := prune(t, rs, idempotency.Retention{Guards: keysWindow, Tasks: keysWindow, BatchSize: 1, Pause: -1}, far)
	require.Zero(t, rep.Events+rep.DeadLetters+rep.Tasks, "no inbox row was finished: %+v", rep)
	want := map[string]idempotency.InboxState{
		"evt_u_failed": idempotency.InboxFailed, "evt_u_redriven": idempotency.InboxPending,
		"evt_u_pending": idempotency.InboxPending, "evt_u_busy": idempotency.InboxProcessing,
	}
	for id, st := range want {
		require.Equal(t, st, ib.record(t, id).State, "%s is kept as it was", id)
		_, err := rs.Forget(ctxT(t), id)
		require.ErrorIs(t, err, idempotency.ErrUnfinished, "%s is not forgotten", id)
	}
	releaseOnce()
	w := receive(t, worked, "the WorkDue that applied evt_u_busy")
	require.NoError(t, w.err)
	require.Equal(t, 2, w.n, "only evt_u_busy and evt_u_pending were due, with the clock set back")

	ib.clock.Advance(48 * time.Hour)
	for ib.counts(t)[idempotency.InboxProcessed] < len(want) {
		n, err := ib.inbox.WorkDue(ctxT(t))
		require.NoError(t, err)
		require.NotZero(t, n, "the events still to apply are due: %v", ib.counts(t))
	}
	require.ElementsMatch(t, []string{"evt_u_busy", "evt_u_pending", "evt_u_failed", "evt_u_redriven"}, ib.appliedOrder())
	require.Equal(t, len(want), b.Get(t, "c"), "each applied once")
}

// testPruneWalksKeys: guards and CheckOrder keys are pruned in
// batches that walk the keys in order; the old ones go, across scopes
// and between kept ones, and the young ones stay.
func testPruneWalksKeys(t *testing.T, b StoreBackend) {
	rs := retentionStore(t, b)
	scopes := []string{"Scope", "scope", "scope-b", "t"}
	keys := []string{"10", "9", "A", "a", "a b", "ab", "B", "b", "é", "z"}
	// run claims, in one event, the guards and order keys of the keys
	// whose index has the given parity, with the order keys created then.
	run := func(id string, parity int, created time.Time) {
		_, err := b.Store.Run(ctxT(t), idempotency.Claim{EventID: id, EventType: "invoice.paid"}, func(ctx context.Context, tx idempotency.Tx) error {
			for i, k := range keys {
				if i%2 != parity {
					continue
				}
				for _, sc := range scopes {
					if _, err := tx.Guard(ctx, sc, k); err != nil {
						return err
					}
					if _, err := idempotency.CheckOrder(ctx, tx, sc, k, created); err != nil {
						return err
					}
				}
			}
			return nil
		})
		require.NoError(t, err)
	}
	start := time.Now()
	oldCreated, newCreated := start.Add(-90*24*time.Hour), start.Add(time.Hour)
	run("evt_walk_old", 0, oldCreated)
	mid := time.Now()
	run("evt_walk_new", 1, newCreated)

	// Measured at mid plus the window: the first event's guards and
	// order keys are older than it, the second's younger.
	var batches int
	window := 67 * 24 * time.Hour // the least: EventIDs plus DeadLetters
	r := idempotency.Retention{Guards: window, EventIDs: 60 * 24 * time.Hour, DeadLetters: 7 * 24 * time.Hour, BatchSize: 3, Pause: -1,
		OnBatch: func(idempotency.PruneReport) { batches++ }}
	rep := prune(t, rs, r, mid.Add(window))
	half := len(keys) / 2 * len(scopes)
	require.Equal(t, 2*half, rep.Guards, "every old guard and order key: %+v", rep)
	require.GreaterOrEqual(t, batches, 2*half/3, "in batches of 3")
	for i, k := range keys {
		for _, sc := range scopes {
			_, ok, err := b.Store.LookupGuard(ctxT(t), sc, k)
			require.NoError(t, err)
			require.Equal(t, i%2 == 1, ok, "guard (%s, %s)", sc, k)
		}
	}
	// The order keys of the young guards stay: an event of the same
	// second as the newest applied is still a tie.
	_, err := b.Store.Run(ctxT(t), idempotency.Claim{EventID: "evt_walk_check", EventType: "invoice.paid"}, func(ctx context.Context, tx idempotency.Tx) error {
		for i, k := range keys {
			want := idempotency.OrderNewer
			if i%2 == 1 {
				want = idempotency.OrderTie
			}
			got, err := idempotency.CheckOrder(ctx, tx, scopes[0], k, newCreated)
			if err != nil {
				return err
			}
			if got != want {
				return fmt.Errorf("order key %q: %v, want %v", k, got, want)
			}
		}
		return nil
	})
	require.NoError(t, err)
}

// testPruneObjects: OnCurrent's row of an object goes once the object was
// not fetched for the event ids' window, not before, and an event after
// that fetches the object as any event does.
func testPruneObjects(t *testing.T, b StoreBackend) {
	rs := retentionStore(t, b)
	cb := newCurrentBench(t, b)
	cb.api.set("sub_prune", "active", 1)
	cb.deliverSync(t, subscriptionEvent("evt_prune_1", subUpdated, "sub_prune", "", currentCreated, "active"), http.StatusOK, idempotency.OutcomeProcessed)
	require.Len(t, cb.api.callsOf("sub_prune"), 1)

	rep := prune(t, rs, idempotency.Retention{}, time.Now().Add(44*24*time.Hour))
	require.Zero(t, rep.Objects, "fetched within the window: kept")
	rep = prune(t, rs, idempotency.Retention{}, time.Now().Add(46*24*time.Hour))
	require.Equal(t, 1, rep.Objects, "%+v", rep)
	rep = prune(t, rs, idempotency.Retention{}, time.Now().Add(46*24*time.Hour))
	require.Zero(t, rep.Objects, "gone")

	cb.api.set("sub_prune", "past_due", 2)
	cb.deliverSync(t, subscriptionEvent("evt_prune_2", subUpdated, "sub_prune", "", currentCreated+1, "past_due"), http.StatusOK, idempotency.OutcomeProcessed)
	require.Len(t, cb.api.callsOf("sub_prune"), 2, "the next event fetches the object")
	cb.requireRow(t, "sub_prune", fakeSubscription{"past_due", 2}, 2)
}
