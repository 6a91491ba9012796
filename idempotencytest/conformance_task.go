package idempotencytest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// taskTests are the guarantees of tasks (idempotency.Task), run by
// RunStoreTests on every store that supports the inbox: a task is stored
// if and only if the handler's writes commit, once per (task, key) ever,
// and run by the inbox's workers after the delivery was answered, with
// retries, dead letter, redrive, snooze and one idempotency key for every
// attempt. They drive the inbox with a fake clock (shared by the inbox and
// the synchronous Handler) and WorkDue: deterministic, no sleeping.
var taskTests = []struct {
	name string
	fn   func(t *testing.T, b StoreBackend)
}{
	{"TaskFailedHandlerEnqueuesNothingSync", func(t *testing.T, b StoreBackend) { testTaskFailedHandler(t, b, viaHandler) }},
	{"TaskFailedHandlerEnqueuesNothingInbox", func(t *testing.T, b StoreBackend) { testTaskFailedHandler(t, b, viaInbox) }},
	{"TaskOncePerKeySync", func(t *testing.T, b StoreBackend) { testTaskOncePerKey(t, b, viaHandler) }},
	{"TaskOncePerKeyInbox", func(t *testing.T, b StoreBackend) { testTaskOncePerKey(t, b, viaInbox) }},
	{"TaskTwiceInOneTransaction", testTaskTwiceInOneTx},
	{"TaskSkipRollsBack", testTaskSkip},
	{"TaskEnqueueWaitsForHolderCommit", func(t *testing.T, b StoreBackend) { testTaskEnqueueWaits(t, b, nil) }},
	{"TaskEnqueueWaitsForHolderRollback", func(t *testing.T, b StoreBackend) { testTaskEnqueueWaits(t, b, errHandler) }},
	{"TaskOutageRetriedWithOneKeySync", func(t *testing.T, b StoreBackend) { testTaskOutage(t, b, viaHandler) }},
	{"TaskOutageRetriedWithOneKeyInbox", func(t *testing.T, b StoreBackend) { testTaskOutage(t, b, viaInbox) }},
	{"TaskLostAnswerHasOneEffect", testTaskLostAnswer},
	{"TaskDeadLetterThenRedrive", testTaskDeadLetter},
	{"TaskPermanentDeadLettersAtOnce", testTaskPermanent},
	{"TaskSnoozeDoesNotCountTheAttempt", testTaskSnooze},
	{"TaskSnoozeZeroRunsOncePerWorkDue", testTaskSnoozeZero},
	{"TaskSnoozeKeepsLastError", testTaskSnoozeKeepsLastError},
	{"TaskStatsListLookup", testTaskStatsList},
	{"TaskRunByWorkersSync", func(t *testing.T, b StoreBackend) { testTaskRunByWorkers(t, b, viaHandler) }},
	{"TaskRunByWorkersInbox", func(t *testing.T, b StoreBackend) { testTaskRunByWorkers(t, b, viaInbox) }},
	{"TaskStaleAttemptCannotSettle", func(t *testing.T, b StoreBackend) { testTaskStaleAttemptCannotSettle(t, b, false) }},
	{"TaskStaleAttemptCannotSettleARedrivenOne", func(t *testing.T, b StoreBackend) { testTaskStaleAttemptCannotSettle(t, b, true) }},
	{"TaskStatsWhileRunning", testTaskStatsWhileRunning},
	{"TaskGivenBackKeepsItsAttemptTime", testTaskGivenBackKeepsItsAttemptTime},
	{"TaskEnqueuedAtItsAttempt", testTaskEnqueuedAtItsAttempt},
	{"TaskRunsAfterItsTransactionsWrites", testTaskRunsAfterItsTransactionsWrites},
	{"TaskDeadlockRetried", testTaskDeadlockRetried},
	{"TaskAndGuardDeadlockRetried", testTaskAndGuardDeadlockRetried},
}

// taskMode is how the bench's events reach their handler.
type taskMode bool

const (
	// viaHandler: the synchronous Handler applies the event in the request;
	// the inbox's workers run only the tasks.
	viaHandler taskMode = false
	// viaInbox: the inbox's Handler stores the event, and a worker applies
	// it, then runs its tasks.
	viaInbox taskMode = true
)

func (m taskMode) String() string {
	if m == viaInbox {
		return "inbox mode"
	}
	return "sync mode"
}

// answered is the outcome a delivery is answered with in the mode: the
// event applied, or stored for a worker.
func (m taskMode) answered() idempotency.Outcome {
	if m == viaInbox {
		return idempotency.OutcomeQueued
	}
	return idempotency.OutcomeProcessed
}

// receiptArgs are the arguments of the bench's task: the invoice to send
// a receipt for, and the event that enqueued it.
type receiptArgs struct {
	Invoice string `json:"invoice"`
	Event   string `json:"event"`
}

// receiptTask is the bench's task name.
const receiptTask = "send-receipt"

// providerCall is one call a task made to the fake provider.
type providerCall struct {
	Key, ID, IdempotencyKey string
	Attempt                 int
	Args                    receiptArgs
	At                      time.Time // the fake clock's time
	// EventOutcome is the ledger's outcome of the event that enqueued the
	// task, read when the call was made; empty when the ledger had none.
	EventOutcome idempotency.Outcome
}

// providerError is an error answer of the fake provider: the task turns
// 429 into Snooze(RetryAfter), another 4xx into Permanent, and retries 5xx.
type providerError struct {
	Status     int
	RetryAfter time.Duration
}

func (e *providerError) Error() string { return fmt.Sprintf("provider answered %d", e.Status) }

// errAnswerLost: the provider accepted the call and applied its effect,
// but the answer never reached the task (a connection reset).
var errAnswerLost = errors.New("connection reset after the provider accepted the request")

// fakeProvider stands in for the email or payment API a task calls. It
// records every call and, as Stripe's API and most providers do, honours
// idempotency keys: a call with a key it accepted before has no new
// effect.
type fakeProvider struct {
	mu      sync.Mutex
	calls   []providerCall
	seen    map[string]bool // idempotency keys accepted
	effects map[string]int  // by task key: how many times the effect happened
	// answer, when set, answers call c: nil to accept it, errAnswerLost to
	// accept it and lose the answer, another error to refuse it.
	answer func(c providerCall) error
}

func (p *fakeProvider) send(c providerCall) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, c)
	var err error
	if p.answer != nil {
		err = p.answer(c)
	}
	if (err == nil || errors.Is(err, errAnswerLost)) && !p.seen[c.IdempotencyKey] {
		p.seen[c.IdempotencyKey] = true
		p.effects[c.Key]++
	}
	return err
}

func (p *fakeProvider) setAnswer(answer func(c providerCall) error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answer = answer
}

func (p *fakeProvider) snapshot() []providerCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

func (p *fakeProvider) effectsSnapshot() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.effects)
}

// taskBench is a service with one task, send-receipt, keyed by invoice:
// invoice.paid and invoice.payment_succeeded write the counter c and
// enqueue the receipt of their invoice in the event's transaction. It has
// both Handlers (synchronous and inbox) and one Inbox on the backend's
// store, on one fake clock.
type taskBench struct {
	b        StoreBackend
	clock    *Clock
	inbox    *idempotency.Inbox
	sync     http.Handler // the synchronous Handler
	queue    http.Handler // the inbox's Handler
	receipt  *idempotency.Task[receiptArgs]
	provider *fakeProvider

	mu       sync.Mutex
	runs     map[string]int  // handler runs per event id
	enqueued map[string]bool // what Enqueue reported in each event's last run
	// fail, when set, is the handler's result for run n of an event,
	// after its write and its Enqueue.
	fail func(eventID string, n int) error
}

// taskStart is where the bench's clock starts.
var taskStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// newTaskBench builds the bench. It skips the test when the store has no
// inbox.
func newTaskBench(t *testing.T, b StoreBackend, cfg idempotency.InboxConfig) *taskBench {
	t.Helper()
	return newTaskBenchOn(t, b, NewClock(taskStart), cfg)
}

// newTaskBenchOn builds the bench on clock; cfg.Now, when set, is the
// inbox's clock instead of clock.Now (the Handlers keep clock.Now).
func newTaskBenchOn(t *testing.T, b StoreBackend, clock *Clock, cfg idempotency.InboxConfig) *taskBench {
	t.Helper()
	tb := &taskBench{
		b:        b,
		clock:    clock,
		provider: &fakeProvider{seen: map[string]bool{}, effects: map[string]int{}},
		runs:     map[string]int{},
		enqueued: map[string]bool{},
	}
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", tb.apply)
	idempotency.On(hs, "invoice.payment_succeeded", tb.apply)
	tb.receipt = idempotency.NewTask(hs, receiptTask, tb.sendReceipt)
	if cfg.Now == nil {
		cfg.Now = tb.clock.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	in := newInbox(t, b, hs, cfg)
	hcfg := idempotency.Config{Secrets: []string{inboxSecret}, Logger: cfg.Logger, Now: tb.clock.Now}
	var err error
	tb.sync, err = idempotency.NewHandler(b.Store, hs, hcfg)
	require.NoError(t, err)
	tb.queue, err = in.Handler(hcfg)
	require.NoError(t, err)
	tb.inbox = in
	return tb
}

// apply is the handler of both invoice events: a business write, then the
// receipt of the invoice, in the event's transaction.
func (tb *taskBench) apply(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[inboxObject]) error {
	tb.mu.Lock()
	tb.runs[ev.ID]++
	n, fail := tb.runs[ev.ID], tb.fail
	tb.mu.Unlock()
	if err := tb.b.Add(ctx, tx, "c", 1); err != nil {
		return err
	}
	enqueued, err := tb.receipt.Enqueue(ctx, tx, ev.Object.ID, receiptArgs{Invoice: ev.Object.ID, Event: ev.ID})
	if err != nil {
		return err
	}
	tb.mu.Lock()
	tb.enqueued[ev.ID] = enqueued
	tb.mu.Unlock()
	if fail != nil {
		return fail(ev.ID, n)
	}
	return nil
}

// sendReceipt is the task: one call to the provider with the task's
// idempotency key, its answer mapped to what the inbox does next.
func (tb *taskBench) sendReceipt(ctx context.Context, run idempotency.TaskRun[receiptArgs]) error {
	c := providerCall{Key: run.Key, ID: run.ID, IdempotencyKey: run.IdempotencyKey, Attempt: run.Attempt, Args: run.Args, At: tb.clock.Now()}
	rec, ok, err := tb.b.Store.LookupEvent(ctx, run.Args.Event)
	if err != nil {
		return err
	}
	if ok {
		c.EventOutcome = rec.Outcome
	}
	err = tb.provider.send(c)
	var pe *providerError
	if errors.As(err, &pe) {
		switch {
		case pe.Status == http.StatusTooManyRequests:
			return idempotency.Snooze(pe.RetryAfter)
		case pe.Status < 500:
			return idempotency.Permanent(err)
		}
	}
	return err
}

// run runs apply as event id's transaction, received now at the fake
// clock, directly on the store: what a handler's transaction is.
func (tb *taskBench) run(ctx context.Context, id string, apply idempotency.ApplyFunc) (idempotency.Outcome, error) {
	c := claim(id)
	c.ReceivedAt = tb.clock.Now()
	return tb.b.Store.Run(ctx, c, apply)
}

// deliver sends event id of type typ about invoice through the mode's
// Handler and requires the answer want.
func (tb *taskBench) deliver(t *testing.T, mode taskMode, id, typ, invoice string, wantStatus int, want idempotency.Outcome) {
	t.Helper()
	h := tb.sync
	if mode == viaInbox {
		h = tb.queue
	}
	a := Deliver(h, inboxEvent(id, typ, invoice, 1756742400), inboxSecret)
	require.Equal(t, wantStatus, a.Status, "delivery of %s in %s: %s", id, mode, a.Body)
	require.Equal(t, want, a.Outcome, "delivery of %s in %s", id, mode)
}

func (tb *taskBench) work(t *testing.T, want int) {
	t.Helper()
	n, err := tb.inbox.WorkDue(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, want, n, "attempts made by WorkDue")
}

// task returns the inbox record of the receipt of invoice.
func (tb *taskBench) task(t *testing.T, invoice string) idempotency.InboxRecord {
	t.Helper()
	r, ok, err := tb.inbox.Lookup(ctxT(t), tb.receipt.ID(invoice))
	require.NoError(t, err)
	require.True(t, ok, "the receipt of %s is not in the inbox", invoice)
	return normalize(r)
}

func (tb *taskBench) requireNoTask(t *testing.T, invoice string) {
	t.Helper()
	_, ok, err := tb.inbox.Lookup(ctxT(t), tb.receipt.ID(invoice))
	require.NoError(t, err)
	require.False(t, ok, "the receipt of %s is in the inbox", invoice)
	st, err := tb.inbox.Stats(ctxT(t))
	require.NoError(t, err)
	for s, n := range st.TaskCounts {
		require.Zero(t, n, "tasks %s", s)
	}
}

// taskCounts are InboxStats.TaskCounts without the zeros.
func (tb *taskBench) taskCounts(t *testing.T) map[idempotency.InboxState]int {
	t.Helper()
	st, err := tb.inbox.Stats(ctxT(t))
	require.NoError(t, err)
	return nonZero(st.TaskCounts)
}

func (tb *taskBench) enqueuedSnapshot() map[string]bool {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return maps.Clone(tb.enqueued)
}

func (tb *taskBench) setFail(fail func(eventID string, n int) error) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.fail = fail
}

// minuteBackoff waits a minute after every failed attempt.
func minuteBackoff(int) time.Duration { return time.Minute }

// testTaskFailedHandler: a handler that enqueues and then fails stores no
// task, so none runs; its retry (Stripe's redelivery in sync mode, the
// inbox's next attempt in inbox mode) enqueues it once, with the
// handler's write, and it runs once.
func testTaskFailedHandler(t *testing.T, b StoreBackend, mode taskMode) {
	tb := newTaskBench(t, b, idempotency.InboxConfig{Backoff: minuteBackoff})
	tb.setFail(func(_ string, n int) error {
		if n == 1 {
			return fmt.Errorf("after Enqueue: %w", errHandler)
		}
		return nil
	})
	if mode == viaHandler {
		tb.deliver(t, mode, "evt_tf", "invoice.paid", "in_tf", http.StatusInternalServerError, "")
		requireNoEvent(t, b, "evt_tf")
		tb.work(t, 0)
	} else {
		tb.deliver(t, mode, "evt_tf", "invoice.paid", "in_tf", http.StatusOK, idempotency.OutcomeQueued)
		// One attempt: the event's. Had its rolled-back task been stored,
		// WorkDue would have leased and run it too.
		tb.work(t, 1)
		r, ok, err := tb.inbox.Lookup(ctxT(t), "evt_tf")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, idempotency.InboxFailed, r.State)
	}
	tb.requireNoTask(t, "in_tf")
	require.Empty(t, tb.provider.snapshot(), "no task ran for a rolled-back handler")
	require.Equal(t, 0, b.Get(t, "c"), "the handler's write rolled back with its task")

	if mode == viaHandler {
		tb.deliver(t, mode, "evt_tf", "invoice.paid", "in_tf", http.StatusOK, idempotency.OutcomeProcessed)
		require.Equal(t, idempotency.InboxPending, tb.task(t, "in_tf").State)
		tb.work(t, 1)
	} else {
		tb.clock.Advance(time.Minute)
		tb.work(t, 2) // the event's second attempt, then the task it enqueued
	}
	require.Equal(t, map[string]bool{"evt_tf": true}, tb.enqueuedSnapshot())
	tb.work(t, 0)
	calls := tb.provider.snapshot()
	require.Len(t, calls, 1, "the task ran once")
	require.Equal(t, receiptArgs{Invoice: "in_tf", Event: "evt_tf"}, calls[0].Args)
	require.Equal(t, map[string]int{"in_tf": 1}, tb.provider.effectsSnapshot())
	require.Equal(t, 1, b.Get(t, "c"))
	require.Equal(t, idempotency.InboxProcessed, tb.task(t, "in_tf").State)
}

// testTaskOncePerKey: twin events (two event ids about one invoice) enqueue
// one task, and so does another event type enqueuing the same key: the
// later Enqueues report false and change nothing, while each event's own
// writes commit. The task runs once, with the arguments of the first.
func testTaskOncePerKey(t *testing.T, b StoreBackend, mode taskMode) {
	tb := newTaskBench(t, b, idempotency.InboxConfig{})
	tb.deliver(t, mode, "evt_twin_1", "invoice.paid", "in_twin", http.StatusOK, mode.answered())
	tb.deliver(t, mode, "evt_twin_2", "invoice.paid", "in_twin", http.StatusOK, mode.answered())
	tb.deliver(t, mode, "evt_twin_3", "invoice.payment_succeeded", "in_twin", http.StatusOK, mode.answered())
	if mode == viaHandler {
		tb.work(t, 1)
	} else {
		// In (created, id) order, one at a time: evt_twin_1 enqueues.
		tb.work(t, 4)
	}
	tb.work(t, 0)
	require.Equal(t, map[string]bool{"evt_twin_1": true, "evt_twin_2": false, "evt_twin_3": false}, tb.enqueuedSnapshot())
	require.Equal(t, 3, b.Get(t, "c"), "every event's own write committed")
	for _, id := range []string{"evt_twin_1", "evt_twin_2", "evt_twin_3"} {
		requireEvent(t, b, id, idempotency.OutcomeProcessed)
	}
	calls := tb.provider.snapshot()
	require.Len(t, calls, 1, "one task for three events")
	require.Equal(t, "evt_twin_1", calls[0].Args.Event, "the first Enqueue's arguments")
	require.Equal(t, map[idempotency.InboxState]int{idempotency.InboxProcessed: 1}, tb.taskCounts(t))

	// Its row is the key's record: Forget refuses it and keeps it.
	if rs, ok := b.Store.(RetentionStore); ok {
		task := tb.task(t, "in_twin")
		_, err := rs.Forget(ctxT(t), task.EventID)
		require.ErrorIs(t, err, idempotency.ErrForgetTask)
		require.Equal(t, idempotency.InboxProcessed, tb.task(t, "in_twin").State)
	}
}

// testTaskTwiceInOneTx: a second Enqueue of a key in the transaction that
// enqueued it reports false and keeps the first's arguments.
func testTaskTwiceInOneTx(t *testing.T, b StoreBackend) {
	tb := newTaskBench(t, b, idempotency.InboxConfig{})
	ctx := ctxT(t)
	out, err := tb.run(ctx, "evt_twice", func(ctx context.Context, tx idempotency.Tx) error {
		first, err := tb.receipt.Enqueue(ctx, tx, "in_twice", receiptArgs{Invoice: "in_twice", Event: "evt_twice"})
		require.NoError(t, err)
		require.True(t, first, "a new key")
		second, err := tb.receipt.Enqueue(ctx, tx, "in_twice", receiptArgs{Invoice: "in_twice", Event: "second call"})
		require.NoError(t, err)
		require.False(t, second, "the key was enqueued earlier in this transaction")
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	tb.work(t, 1)
	calls := tb.provider.snapshot()
	require.Len(t, calls, 1)
	require.Equal(t, "evt_twice", calls[0].Args.Event)
}

// testTaskSkip: a handler that enqueues and then skips the event stores no
// task: it rolls back with the handler's writes, and the key stays free for
// the next event.
func testTaskSkip(t *testing.T, b StoreBackend) {
	tb := newTaskBench(t, b, idempotency.InboxConfig{})
	tb.setFail(func(id string, _ int) error {
		if id == "evt_ts_skip" {
			return idempotency.Skip("no account in metadata")
		}
		return nil
	})
	tb.deliver(t, viaHandler, "evt_ts_skip", "invoice.paid", "in_ts", http.StatusOK, idempotency.OutcomeSkipped)
	requireEvent(t, b, "evt_ts_skip", idempotency.OutcomeSkipped)
	require.Equal(t, map[string]bool{"evt_ts_skip": true}, tb.enqueuedSnapshot(), "Enqueue ran before the skip")
	tb.requireNoTask(t, "in_ts")
	tb.work(t, 0)
	require.Empty(t, tb.provider.snapshot())
	require.Equal(t, 0, b.Get(t, "c"))

	tb.deliver(t, viaHandler, "evt_ts_next", "invoice.paid", "in_ts", http.StatusOK, idempotency.OutcomeProcessed)
	require.True(t, tb.enqueuedSnapshot()["evt_ts_next"], "the skipped event did not take the key")
	tb.work(t, 1)
	require.Equal(t, "evt_ts_next", tb.provider.snapshot()[0].Args.Event)
}

// testTaskEnqueueWaits: an Enqueue of a key that a transaction in flight
// enqueued waits for that transaction; it reports false when the holder
// committed, and true when it rolled back. The task that runs is the one
// of the transaction that committed.
func testTaskEnqueueWaits(t *testing.T, b StoreBackend, holderResult error) {
	tb := newTaskBench(t, b, idempotency.InboxConfig{})
	ctx := ctxT(t)
	held := make(chan struct{})
	releaseHolder, release := releaser(t)
	holder := make(chan error, 1)
	go func() {
		_, err := tb.run(ctx, "evt_tw_holder", func(ctx context.Context, tx idempotency.Tx) error {
			enqueued, err := tb.receipt.Enqueue(ctx, tx, "in_contended", receiptArgs{Invoice: "in_contended", Event: "evt_tw_holder"})
			if err != nil {
				return err
			}
			if !enqueued {
				return errors.New("the holder's Enqueue of a new key reported false")
			}
			close(held)
			<-release
			return holderResult
		})
		holder <- err
	}()
	receive(t, held, "the holder's Enqueue")
	type result struct {
		enqueued bool
		err      error
	}
	waiter := make(chan result, 1)
	go func() {
		var enqueued bool // of the last attempt: a store may run the transaction again
		_, err := tb.run(ctx, "evt_tw_waiter", func(ctx context.Context, tx idempotency.Tx) error {
			var err error
			enqueued, err = tb.receipt.Enqueue(ctx, tx, "in_contended", receiptArgs{Invoice: "in_contended", Event: "evt_tw_waiter"})
			return err
		})
		waiter <- result{enqueued, err}
	}()
	waitingReaches(t, b, 1, waitLimit,
		"the second Enqueue should wait for the holder")
	select {
	case <-waiter:
		t.Fatal("Enqueue returned while the key was held by a transaction in flight")
	default:
	}
	releaseHolder()
	require.ErrorIs(t, receive(t, holder, "the holder's Run"), holderResult)
	got := receive(t, waiter, "the Enqueue waiting for the holder, which has ended,")
	require.NoError(t, got.err)
	require.Equal(t, holderResult != nil, got.enqueued, "enqueued only when the holder rolled back")

	tb.work(t, 1)
	tb.work(t, 0)
	calls := tb.provider.snapshot()
	require.Len(t, calls, 1)
	want := "evt_tw_holder"
	if holderResult != nil {
		want = "evt_tw_waiter"
	}
	require.Equal(t, want, calls[0].Args.Event, "the task of the transaction that committed")
}

// idempotencyKeyPattern is what TaskRun.IdempotencyKey promises: the task's
// name and 64 lowercase hex digits.
var idempotencyKeyPattern = regexp.MustCompile(`^` + receiptTask + `-[0-9a-f]{64}$`)

// testTaskOutage: the provider is down for an hour of the fake clock. The
// delivery is answered 2xx (processed in sync mode, queued in inbox mode)
// before any attempt; the task then fails, is retried at the default
// backoff (the test advances the clock to each NextAttemptAt that Lookup
// reports) with its last error recorded, and succeeds once the provider is
// back, the error cleared. Every attempt carries the same idempotency key
// and counts up from 1.
func testTaskOutage(t *testing.T, b StoreBackend, mode taskMode) {
	tb := newTaskBench(t, b, idempotency.InboxConfig{}) // the default backoff and MaxAttempts
	start := tb.clock.Now()
	tb.provider.setAnswer(func(c providerCall) error {
		if c.At.Before(start.Add(time.Hour)) {
			return fmt.Errorf("attempt %d: %w", c.Attempt, &providerError{Status: http.StatusServiceUnavailable})
		}
		return nil
	})
	tb.deliver(t, mode, "evt_out", "invoice.paid", "in_out", http.StatusOK, mode.answered())
	require.Empty(t, tb.provider.snapshot(), "the delivery was answered before any attempt of its task")
	if mode == viaInbox {
		tb.work(t, 2) // the event, then the first attempt of its task
	} else {
		tb.work(t, 1)
	}
	for n := 1; ; n++ {
		r := tb.task(t, "in_out")
		if r.State == idempotency.InboxProcessed {
			break
		}
		require.Equal(t, idempotency.InboxFailed, r.State, "after attempt %d", n)
		require.Equal(t, n, r.Attempt)
		require.Equal(t, fmt.Sprintf("attempt %d: provider answered 503", n), r.LastError)
		require.Equal(t, tb.clock.Now(), r.AttemptedAt)
		// DefaultBackoff: n⁴ seconds ±10%.
		nominal := time.Duration(math.Pow(float64(n), 4)) * time.Second
		require.InEpsilon(t, float64(nominal), float64(r.NextAttemptAt.Sub(r.AttemptedAt)), 0.1001, "the wait after attempt %d", n)
		if n == 1 {
			tb.clock.Set(r.NextAttemptAt.Add(-time.Millisecond))
			tb.work(t, 0) // not due yet
		}
		tb.clock.Set(r.NextAttemptAt)
		tb.work(t, 1)
	}
	r := tb.task(t, "in_out")
	require.Empty(t, r.LastError, "cleared on success")
	require.Equal(t, tb.clock.Now(), r.FinishedAt)
	require.True(t, r.NextAttemptAt.IsZero())
	require.True(t, tb.clock.Now().Sub(start) >= time.Hour)

	// The waits after attempts 1..6 add up to 38 minutes ±10%, and with
	// the 7th to 78: attempt 7 fails and attempt 8 succeeds.
	calls := tb.provider.snapshot()
	require.Len(t, calls, 8)
	require.Equal(t, 8, r.Attempt)
	for i, c := range calls {
		require.Equal(t, i+1, c.Attempt, "TaskRun.Attempt counts the attempts")
		require.Equal(t, calls[0].IdempotencyKey, c.IdempotencyKey, "attempt %d's idempotency key", c.Attempt)
		require.Equal(t, "in_out", c.Key)
		require.Equal(t, tb.receipt.ID("in_out"), c.ID)
		require.Equal(t, receiptArgs{Invoice: "in_out", Event: "evt_out"}, c.Args)
		require.Equal(t, idempotency.OutcomeProcessed, c.EventOutcome, "the event's transaction had committed")
	}
	require.Regexp(t, idempotencyKeyPattern, calls[0].IdempotencyKey)
	require.Equal(t, map[string]int{"in_out": 1}, tb.provider.effectsSnapshot())
}

// testTaskLostAnswer: a task runs at least once. The provider accepts the
// first attempt but its answer is lost; the task is retried with the same
// idempotency key and the provider, honouring it, applies the effect once.
func testTaskLostAnswer(t *testing.T, b StoreBackend) {
	tb := newTaskBench(t, b, idempotency.InboxConfig{Backoff: minuteBackoff})
	tb.provider.setAnswer(func(c providerCall) error {
		if c.Attempt == 1 {
			return errAnswerLost
		}
		return nil
	})
	tb.deliver(t, viaHandler, "evt_lost", "invoice.paid", "in_lost", http.StatusOK, idempotency.OutcomeProcessed)
	tb.work(t, 1)
	require.Equal(t, idempotency.InboxFailed, tb.task(t, "in_lost").State)
	tb.clock.Advance(time.Minute)
	tb.work(t, 1)
	require.Equal(t, idempotency.InboxProcessed, tb.task(t, "in_lost").State)
	calls := tb.provider.snapshot()
	require.Len(t, calls, 2, "run again after the lost answer")
	require.Equal(t, calls[0].IdempotencyKey, calls[1].IdempotencyKey)
	require.Equal(t, map[string]int{"in_lost": 1}, tb.provider.effectsSnapshot(), "one effect")
}

// testTaskDeadLetter: a task that fails every attempt is dead-lettered
// after MaxAttempts with its last error, and never run again; a redrive of
// the tasks (RedriveFilter.Kind) after the fix runs it once, with a fresh
// budget, its record counting the redrive (Redrives, RedrivenAt), a dry
// run not. Each attempt, the redriven one included, is reported once to
// OnResult and once to the Observer's done.
func testTaskDeadLetter(t *testing.T, b StoreBackend) {
	var reportsMu sync.Mutex
	reports := map[string][]string{}
	report := func(hook string) func(idempotency.Result) {
		return func(r idempotency.Result) {
			reportsMu.Lock()
			defer reportsMu.Unlock()
			reports[hook] = append(reports[hook], fmt.Sprintf("%s attempt %d %s %s", r.Kind, r.Attempt, r.Outcome, r.State))
		}
	}
	observer := &idempotency.Observer{Attempt: func(ctx context.Context, _ idempotency.InboxRecord, _ string) (context.Context, func(idempotency.Result)) {
		return ctx, report("Observer")
	}}
	tb := newTaskBench(t, b, idempotency.InboxConfig{MaxAttempts: 3, Backoff: minuteBackoff, OnResult: report("OnResult"), Observer: observer})
	var mu sync.Mutex
	fixed := false
	tb.provider.setAnswer(func(c providerCall) error {
		mu.Lock()
		defer mu.Unlock()
		if !fixed {
			return fmt.Errorf("attempt %d: %w", c.Attempt, &providerError{Status: http.StatusBadGateway})
		}
		return nil
	})
	tb.deliver(t, viaHandler, "evt_poison", "invoice.paid", "in_poison", http.StatusOK, idempotency.OutcomeProcessed)
	for range 3 {
		tb.work(t, 1)
		tb.clock.Advance(time.Minute)
	}
	tb.clock.Advance(time.Hour)
	tb.work(t, 0)
	r := tb.task(t, "in_poison")
	require.Equal(t, idempotency.InboxDeadLetter, r.State)
	require.Equal(t, 3, r.Attempt)
	require.Equal(t, "attempt 3: provider answered 502", r.LastError)
	require.True(t, r.NextAttemptAt.IsZero())
	require.False(t, r.FinishedAt.IsZero())
	require.Len(t, tb.provider.snapshot(), 3)
	require.Equal(t, map[idempotency.InboxState]int{idempotency.InboxDeadLetter: 1}, tb.taskCounts(t))

	n, err := tb.inbox.Redrive(ctxT(t), idempotency.RedriveFilter{Kind: idempotency.KindEvent, DryRun: true})
	require.NoError(t, err)
	require.Zero(t, n, "Kind event selects no task")
	n, err = tb.inbox.Redrive(ctxT(t), idempotency.RedriveFilter{Kind: idempotency.KindTask, DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	events, tasks, err := tb.inbox.RedriveByKind(ctxT(t), idempotency.RedriveFilter{DryRun: true})
	require.NoError(t, err)
	require.Equal(t, [2]int{0, 1}, [2]int{events, tasks}, "both kinds selected, counted apart")
	r = tb.task(t, "in_poison")
	require.Equal(t, idempotency.InboxDeadLetter, r.State, "a dry run moves nothing")
	require.Zero(t, r.Redrives, "never redriven")
	require.True(t, r.RedrivenAt.IsZero(), "never redriven: %s", r.RedrivenAt)

	mu.Lock()
	fixed = true
	mu.Unlock()
	events, tasks, err = tb.inbox.RedriveByKind(ctxT(t), idempotency.RedriveFilter{Kind: idempotency.KindTask})
	require.NoError(t, err)
	require.Equal(t, [2]int{0, 1}, [2]int{events, tasks}, "the move counts the task as a task")
	r = tb.task(t, "in_poison")
	require.Equal(t, idempotency.InboxPending, r.State)
	require.Zero(t, r.Attempt, "a fresh attempt budget")
	require.Equal(t, tb.clock.Now(), r.NextAttemptAt)
	require.Equal(t, 1, r.Redrives, "the redrive is counted")
	require.Equal(t, tb.clock.Now(), r.RedrivenAt)
	redrivenAt := tb.clock.Now()
	tb.clock.Advance(time.Second)
	tb.work(t, 1)
	tb.work(t, 0)
	r = tb.task(t, "in_poison")
	require.Equal(t, idempotency.InboxProcessed, r.State)
	require.Equal(t, 1, r.Attempt)
	require.Equal(t, 1, r.Redrives, "applied, it keeps its redrive history")
	require.Equal(t, redrivenAt, r.RedrivenAt)
	calls := tb.provider.snapshot()
	require.Len(t, calls, 4)
	require.Equal(t, 1, calls[3].Attempt, "the redriven run is attempt 1 again")
	require.Equal(t, calls[0].IdempotencyKey, calls[3].IdempotencyKey, "and keeps its idempotency key")
	require.Equal(t, map[string]int{"in_poison": 1}, tb.provider.effectsSnapshot())

	want := []string{
		"task attempt 1 failed failed", "task attempt 2 failed failed", "task attempt 3 failed dead_letter",
		"task attempt 1 processed processed", // the redriven run
	}
	reportsMu.Lock()
	defer reportsMu.Unlock()
	require.Equal(t, map[string][]string{"OnResult": want, "Observer": want}, reports, "each attempt reported once")
}

// testTaskPermanent: a task that returns Permanent is dead-lettered after
// its first attempt, whatever MaxAttempts says, and not retried.
func testTaskPermanent(t *testing.T, b StoreBackend) {
	tb := newTaskBench(t, b, idempotency.InboxConfig{Backoff: minuteBackoff})
	tb.provider.setAnswer(func(providerCall) error { return &providerError{Status: http.StatusBadRequest} })
	tb.deliver(t, viaHandler, "evt_perm", "invoice.paid", "in_perm", http.StatusOK, idempotency.OutcomeProcessed)
	tb.work(t, 1)
	r := tb.task(t, "in_perm")
	require.Equal(t, idempotency.InboxDeadLetter, r.State)
	require.Equal(t, 1, r.Attempt)
	require.Contains(t, r.LastError, "provider answered 400")
	require.True(t, r.NextAttemptAt.IsZero())
	require.Equal(t, tb.clock.Now(), r.FinishedAt)
	tb.clock.Advance(24 * time.Hour)
	tb.work(t, 0)
	require.Len(t, tb.provider.snapshot(), 1, "no retry")
	require.Empty(t, tb.provider.effectsSnapshot())
}

// testTaskSnooze: a task that returns Snooze(d) goes back to pending, due
// after d, without counting the attempt: it is not run before d has
// passed, and snoozing more often than MaxAttempts does not dead-letter
// it.
func testTaskSnooze(t *testing.T, b StoreBackend) {
	tb := newTaskBench(t, b, idempotency.InboxConfig{MaxAttempts: 2})
	tb.provider.setAnswer(func(providerCall) error {
		return &providerError{Status: http.StatusTooManyRequests, RetryAfter: 10 * time.Minute}
	})
	tb.deliver(t, viaHandler, "evt_snooze", "invoice.paid", "in_snooze", http.StatusOK, idempotency.OutcomeProcessed)
	for i := range 3 {
		attemptedAt := tb.clock.Now()
		tb.work(t, 1)
		r := tb.task(t, "in_snooze")
		require.Equal(t, idempotency.InboxPending, r.State, "snooze %d", i+1)
		require.Zero(t, r.Attempt, "a snoozed attempt is not counted")
		require.Empty(t, r.LastError)
		require.Equal(t, attemptedAt.Add(10*time.Minute), r.NextAttemptAt)
		require.True(t, r.FinishedAt.IsZero(), "a snoozed task is not finished")
		tb.clock.Advance(10*time.Minute - time.Second)
		tb.work(t, 0) // not before d
		tb.clock.Advance(time.Second)
	}
	tb.provider.setAnswer(nil)
	tb.work(t, 1)
	r := tb.task(t, "in_snooze")
	require.Equal(t, idempotency.InboxProcessed, r.State)
	require.Equal(t, 1, r.Attempt)
	calls := tb.provider.snapshot()
	require.Len(t, calls, 4)
	for _, c := range calls {
		require.Equal(t, 1, c.Attempt, "TaskRun.Attempt does not count snoozes")
	}
	require.Equal(t, map[string]int{"in_snooze": 1}, tb.provider.effectsSnapshot())
}

// testTaskSnoozeZero: a task that keeps answering Snooze(0) is due again
// at once, at a clock that stands still; WorkDue runs it once per call
// and returns, the task pending and due, its attempt not counted.
func testTaskSnoozeZero(t *testing.T, b StoreBackend) {
	tb := newTaskBench(t, b, idempotency.InboxConfig{})
	tb.provider.setAnswer(func(providerCall) error {
		return &providerError{Status: http.StatusTooManyRequests} // Retry-After: 0
	})
	tb.deliver(t, viaInbox, "evt_snooze0", "invoice.paid", "in_snooze0", http.StatusOK, idempotency.OutcomeQueued)
	tb.work(t, 2) // the event, then its task once
	for i := range 2 {
		r := tb.task(t, "in_snooze0")
		require.Equal(t, idempotency.InboxPending, r.State, "snooze %d", i+1)
		require.Zero(t, r.Attempt, "a snoozed attempt is not counted")
		require.Equal(t, tb.clock.Now(), r.NextAttemptAt, "due at once")
		require.Len(t, tb.provider.snapshot(), i+1)
		tb.work(t, 1)
	}
	tb.provider.setAnswer(nil)
	tb.work(t, 1)
	require.Equal(t, idempotency.InboxProcessed, tb.task(t, "in_snooze0").State)
	require.Equal(t, map[string]int{"in_snooze0": 1}, tb.provider.effectsSnapshot())
}

// testTaskStatsList: InboxStats.TaskCounts counts the tasks alone, Counts
// events and tasks together, Events the events alone; List and Redrive
// select by Kind; Lookup of a task's id returns its record, kind task,
// typed by the task's name.
func testTaskStatsList(t *testing.T, b StoreBackend) {
	tb := newTaskBench(t, b, idempotency.InboxConfig{Backoff: minuteBackoff})
	tb.provider.setAnswer(func(c providerCall) error {
		if c.Key == "in_st_b" {
			return &providerError{Status: http.StatusServiceUnavailable}
		}
		return nil
	})
	t0 := tb.clock.Now()
	tb.deliver(t, viaInbox, "evt_st_a", "invoice.paid", "in_st_a", http.StatusOK, idempotency.OutcomeQueued)
	st, err := tb.inbox.Stats(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, 1, st.Counts[idempotency.InboxPending])
	require.Len(t, st.TaskCounts, 7, "every state is counted, zero included")
	for s, n := range st.TaskCounts {
		require.Zero(t, n, "an event is not a task (%s)", s)
	}
	tb.work(t, 2)
	tb.clock.Advance(time.Second)
	tb.deliver(t, viaInbox, "evt_st_b", "invoice.paid", "in_st_b", http.StatusOK, idempotency.OutcomeQueued)
	tb.work(t, 2)

	st, err = tb.inbox.Stats(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, map[idempotency.InboxState]int{idempotency.InboxProcessed: 3, idempotency.InboxFailed: 1}, nonZero(st.Counts))
	require.Equal(t, map[idempotency.InboxState]int{idempotency.InboxProcessed: 1, idempotency.InboxFailed: 1}, nonZero(st.TaskCounts))
	require.Equal(t, 2, st.Events(idempotency.InboxProcessed), "the events alone")
	require.Zero(t, st.Events(idempotency.InboxFailed), "the failed row is a task")
	require.True(t, st.OldestPending.Equal(t0.Add(time.Second)), "the failed task is the oldest still to run: %s", st.OldestPending)

	ids := func(f idempotency.InboxFilter) []string { t.Helper(); return listIDs(t, tb.inbox, f) }
	taskA, taskB := tb.receipt.ID("in_st_a"), tb.receipt.ID("in_st_b")
	require.Equal(t, "task:send-receipt:in_st_a", taskA)
	require.Equal(t, []string{taskB, "evt_st_b", taskA, "evt_st_a"}, ids(idempotency.InboxFilter{}), "newest first, then by id")
	require.Equal(t, []string{taskB, taskA}, ids(idempotency.InboxFilter{Kind: idempotency.KindTask}))
	require.Equal(t, []string{"evt_st_b", "evt_st_a"}, ids(idempotency.InboxFilter{Kind: idempotency.KindEvent}))
	require.Equal(t, []string{taskB}, ids(idempotency.InboxFilter{Kind: idempotency.KindTask, States: []idempotency.InboxState{idempotency.InboxFailed}}))
	require.Equal(t, []string{taskB, taskA}, ids(idempotency.InboxFilter{EventType: receiptTask}))
	require.Empty(t, ids(idempotency.InboxFilter{Kind: idempotency.KindEvent, EventType: receiptTask}))

	r, ok, err := tb.inbox.Lookup(ctxT(t), taskA)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, idempotency.InboxRecord{
		Kind: idempotency.KindTask, EventID: taskA, EventType: receiptTask, Created: t0,
		State: idempotency.InboxProcessed, Attempt: 1, ReceivedAt: t0, AttemptedAt: t0, FinishedAt: t0,
	}, normalize(r))
	rb := tb.task(t, "in_st_b")
	require.Equal(t, idempotency.KindTask, rb.Kind)
	require.Equal(t, receiptTask, rb.EventType)
	require.Equal(t, idempotency.InboxFailed, rb.State)
	require.Equal(t, "provider answered 503", rb.LastError)

	n, err := tb.inbox.Redrive(ctxT(t), idempotency.RedriveFilter{Kind: idempotency.KindEvent, States: []idempotency.InboxState{idempotency.InboxFailed}, DryRun: true})
	require.NoError(t, err)
	require.Zero(t, n)
	n, err = tb.inbox.Redrive(ctxT(t), idempotency.RedriveFilter{Kind: idempotency.KindTask, States: []idempotency.InboxState{idempotency.InboxFailed}, DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 1, n)

	_, err = tb.inbox.List(ctxT(t), idempotency.InboxFilter{Kind: "job"})
	require.ErrorContains(t, err, "InboxFilter.Kind")
	_, err = tb.inbox.Redrive(ctxT(t), idempotency.RedriveFilter{Kind: "job"})
	require.ErrorContains(t, err, "RedriveFilter.Kind")
}

// testTaskRunByWorkers: Inbox.Run's workers run a task as soon as the
// transaction that enqueued it commits: in sync mode next to the
// synchronous Handler, in inbox mode after the worker applied the event.
// Run's first lease reads the inbox's clock an hour early, so it cannot
// take the task however late it runs, and the poll interval is an hour:
// in sync mode only the wake-up of the commit that enqueued the task can
// start it within the test's wait.
func testTaskRunByWorkers(t *testing.T, b StoreBackend, mode taskMode) {
	results := make(chan idempotency.Result, 16)
	clock := NewClock(taskStart)
	var nowCalls atomic.Int32
	firstLease := make(chan struct{})
	tb := newTaskBenchOn(t, b, clock, idempotency.InboxConfig{
		Workers: 2, PollInterval: time.Hour, PollOnly: true,
		OnResult: func(r idempotency.Result) { results <- r },
		Now: func() time.Time {
			if nowCalls.Add(1) == 1 { // Run's first lease: nothing is stored yet
				close(firstLease)
				return clock.Now().Add(-time.Hour)
			}
			return clock.Now()
		},
	})
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- tb.inbox.Run(ctx) }()
	receive(t, firstLease, "Run's first lease")

	tb.deliver(t, mode, "evt_run", "invoice.paid", "in_run", http.StatusOK, mode.answered())
	taskID := tb.receipt.ID("in_run")
	for {
		r := receive(t, results, "the workers' attempt of the task")
		if r.EventID != taskID {
			require.Equal(t, mode, viaInbox, "in sync mode the workers have only the task to run")
			require.Equal(t, "evt_run", r.EventID)
			require.Equal(t, idempotency.OutcomeProcessed, r.Outcome)
			continue
		}
		require.Equal(t, idempotency.OutcomeProcessed, r.Outcome)
		require.NoError(t, r.Err)
		require.Equal(t, 1, r.Attempt)
		break
	}
	cancel()
	require.NoError(t, receive(t, stopped, "Inbox.Run after its context ended"))

	calls := tb.provider.snapshot()
	require.Len(t, calls, 1)
	require.Equal(t, idempotency.OutcomeProcessed, calls[0].EventOutcome, "the task ran after its event's transaction committed")
	require.Equal(t, idempotency.InboxProcessed, tb.task(t, "in_run").State)
	require.Equal(t, 1, b.Get(t, "c"))
	require.Equal(t, map[string]int{"in_run": 1}, tb.provider.effectsSnapshot())
}

// testTaskStaleAttemptCannotSettle: settling is fenced on the lease
// (attempt number and AttemptedAt). A task's attempt 1 runs past its
// lease; a second worker takes the task over and runs it too; attempt 1
// then fails, and its end is not recorded over the attempt in flight: the
// task stays processing under the newer lease, and the newer attempt's
// success makes it processed. With redriven set, the task is
// dead-lettered (MaxAttempts 1) while attempt 1 runs and redriven, so the
// newer attempt is numbered 1 too: only AttemptedAt tells them apart.
func testTaskStaleAttemptCannotSettle(t *testing.T, b StoreBackend, redriven bool) {
	clock := NewClock(taskStart)
	hs := idempotency.NewHandlers()
	type call struct {
		attempt int
		result  chan error // what the attempt returns
	}
	calls := make(chan call)
	stale := idempotency.NewTask(hs, "stale-settle", func(ctx context.Context, run idempotency.TaskRun[struct{}]) error {
		c := call{attempt: run.Attempt, result: make(chan error, 1)}
		// An attempt the test did not expect fails it, not hangs it.
		select {
		case calls <- c:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case err := <-c.result:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	cfg := idempotency.InboxConfig{Now: clock.Now, Logger: slog.New(slog.DiscardHandler), Backoff: minuteBackoff, MaxAttempts: 3}
	if redriven {
		cfg.MaxAttempts = 1
	}
	in := newInbox(t, b, hs, cfg)
	id := stale.ID("k")
	c := claim("evt_stale_settle")
	c.ReceivedAt = clock.Now() // the task is due then
	out, err := b.Store.Run(ctxT(t), c, func(ctx context.Context, tx idempotency.Tx) error {
		_, err := stale.Enqueue(ctx, tx, "k", struct{}{})
		return err
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	lookup := func() idempotency.InboxRecord {
		t.Helper()
		r, ok, err := in.Lookup(ctxT(t), id)
		require.NoError(t, err)
		require.True(t, ok)
		return normalize(r)
	}
	workDue := func() chan int {
		done := make(chan int, 1)
		go func() {
			n, _ := in.WorkDue(context.Background())
			done <- n
		}()
		return done
	}

	firstDone := workDue()
	first := receive(t, calls, "attempt 1")
	require.Equal(t, 1, first.attempt)
	clock.Advance(idempotency.DefaultLease + time.Second) // attempt 1 is past its lease
	if redriven {
		n, err := in.WorkDue(ctxT(t))
		require.NoError(t, err)
		require.Zero(t, n)
		require.Equal(t, idempotency.InboxDeadLetter, lookup().State, "its lease expired at the last attempt")
		n, err = in.Redrive(ctxT(t), idempotency.RedriveFilter{Kind: idempotency.KindTask})
		require.NoError(t, err)
		require.Equal(t, 1, n)
	}
	secondDone := workDue()
	second := receive(t, calls, "the attempt that took the task over")
	wantAttempt := 2
	if redriven {
		wantAttempt = 1
	}
	require.Equal(t, wantAttempt, second.attempt)
	taken := lookup()
	require.Equal(t, idempotency.InboxProcessing, taken.State)
	require.Equal(t, clock.Now(), taken.AttemptedAt)

	first.result <- errors.New("attempt 1 failed past its lease")
	require.Equal(t, 1, receive(t, firstDone, "the WorkDue of attempt 1"))
	r := lookup()
	require.Equal(t, idempotency.InboxProcessing, r.State, "the stale attempt's failure was recorded over the attempt in flight")
	require.Equal(t, wantAttempt, r.Attempt)
	require.Equal(t, taken.AttemptedAt, r.AttemptedAt)
	require.Equal(t, taken.LastError, r.LastError, "attempt 1's error is not recorded")

	second.result <- nil
	require.Equal(t, 1, receive(t, secondDone, "the WorkDue of the newer attempt"))
	r = lookup()
	require.Equal(t, idempotency.InboxProcessed, r.State, "the newer attempt's success is recorded")
	require.Equal(t, wantAttempt, r.Attempt)
	require.Equal(t, clock.Now(), r.FinishedAt)
}

// testTaskStatsWhileRunning: a task being run is processing, and still to
// be applied: Stats counts it, among the tasks too, its ReceivedAt is
// OldestPending when nothing older waits, and its attempt's start is
// LastAttempt, running and applied.
func testTaskStatsWhileRunning(t *testing.T, b StoreBackend) {
	clock := NewClock(taskStart)
	hs := idempotency.NewHandlers()
	var in *idempotency.Inbox
	var seen []idempotency.InboxStats
	var seenErr error
	task := idempotency.NewTask(hs, "stats-running", func(ctx context.Context, run idempotency.TaskRun[struct{}]) error {
		st, err := in.Stats(ctx)
		seen, seenErr = append(seen, st), err
		return nil
	})
	in = newInbox(t, b, hs, idempotency.InboxConfig{Now: clock.Now, Logger: slog.New(slog.DiscardHandler)})
	c := claim("evt_stats_running")
	c.ReceivedAt = clock.Now()
	_, err := b.Store.Run(ctxT(t), c, func(ctx context.Context, tx idempotency.Tx) error {
		_, err := task.Enqueue(ctx, tx, "k", struct{}{})
		return err
	})
	require.NoError(t, err)
	received := clock.Now()
	st, err := in.Stats(ctxT(t))
	require.NoError(t, err)
	require.True(t, st.LastAttempt.IsZero(), "the task was not attempted yet: LastAttempt %s", st.LastAttempt)
	clock.Advance(time.Minute)
	attempted := clock.Now()
	n, err := in.WorkDue(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoError(t, seenErr)
	require.Len(t, seen, 1)
	st = seen[0]
	require.Equal(t, 1, st.Counts[idempotency.InboxProcessing])
	require.Equal(t, 1, st.TaskCounts[idempotency.InboxProcessing])
	require.Zero(t, st.Events(idempotency.InboxProcessing))
	require.True(t, st.OldestPending.Equal(received), "the running task is still to apply: OldestPending %s, want %s", st.OldestPending, received)
	require.True(t, st.LastAttempt.Equal(attempted), "the running task's attempt: LastAttempt %s, want %s", st.LastAttempt, attempted)

	st, err = in.Stats(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, 1, st.TaskCounts[idempotency.InboxProcessed])
	require.Zero(t, st.Counts[idempotency.InboxProcessing])
	require.True(t, st.OldestPending.IsZero(), "nothing left to apply")
	require.True(t, st.LastAttempt.Equal(attempted), "the task's attempt, applied: LastAttempt %s, want %s", st.LastAttempt, attempted)
}

// testTaskGivenBackKeepsItsAttemptTime: a task leased but not attempted
// (WorkDue leases a task that snoozed in the same call again, and gives it
// back) is pending, due at once, with the Attempt and AttemptedAt of its
// last attempt: the lease it was given back from started none, and Stats'
// LastAttempt is that attempt's start too. The task's func moves the clock
// on, so that the lease given back started later than the snoozed attempt.
func testTaskGivenBackKeepsItsAttemptTime(t *testing.T, b StoreBackend) {
	clock := NewClock(taskStart)
	hs := idempotency.NewHandlers()
	var runs atomic.Int32
	task := idempotency.NewTask(hs, "given-back", func(ctx context.Context, run idempotency.TaskRun[struct{}]) error {
		if runs.Add(1) == 1 {
			clock.Advance(time.Second)
			return idempotency.Snooze(0)
		}
		return nil
	})
	in := newInbox(t, b, hs, idempotency.InboxConfig{Now: clock.Now, Logger: slog.New(slog.DiscardHandler)})
	c := claim("evt_given_back")
	c.ReceivedAt = clock.Now()
	_, err := b.Store.Run(ctxT(t), c, func(ctx context.Context, tx idempotency.Tx) error {
		_, err := task.Enqueue(ctx, tx, "k", struct{}{})
		return err
	})
	require.NoError(t, err)
	attempted := clock.Now()

	n, err := in.WorkDue(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, 1, n, "the snoozed attempt; the lease after it is given back")
	require.EqualValues(t, 1, runs.Load())
	r, ok, err := in.Lookup(ctxT(t), task.ID("k"))
	require.NoError(t, err)
	require.True(t, ok)
	r = normalize(r)
	require.Equal(t, idempotency.InboxPending, r.State)
	require.Zero(t, r.Attempt, "neither the snoozed attempt nor the lease given back counts")
	require.Equal(t, attempted, r.AttemptedAt, "the snoozed attempt's start, not the lease given back's")
	require.Equal(t, clock.Now(), r.NextAttemptAt, "due at once")
	require.True(t, r.LeaseUntil.IsZero(), "given back: no lease held")
	st, err := in.Stats(ctxT(t))
	require.NoError(t, err)
	require.True(t, st.LastAttempt.Equal(attempted), "the lease given back does not count: LastAttempt %s, want the snoozed attempt's %s", st.LastAttempt, attempted)

	n, err = in.WorkDue(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, 1, n)
	r, _, err = in.Lookup(ctxT(t), task.ID("k"))
	require.NoError(t, err)
	require.Equal(t, idempotency.InboxProcessed, r.State)
	require.Equal(t, 1, r.Attempt)
}
