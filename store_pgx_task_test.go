package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// Tasks on a real PostgreSQL, with faults: the service of the inbox's fault
// tests (faultApp), whose handlers also enqueue a send-receipt task per
// invoice, keyed by the invoice id. The task sends the receipt to a fake
// provider that honours idempotency keys, as Stripe and most email and
// payment APIs do. A task runs at least once; what these tests prove is
// that, whatever dies, the provider's effect happens once per key.

// receiptTask is the task's name; a task's inbox id is task:<name>:<key>.
const receiptTask = "send-receipt"

// receiptTaskPrefix is what precedes the invoice id in a task's id.
const receiptTaskPrefix = "task:" + receiptTask + ":"

func receiptTaskID(invoice string) string { return receiptTaskPrefix + invoice }

// taskReceipt are the arguments of the send-receipt task.
type taskReceipt struct {
	Account string `json:"account"`
	Amount  int64  `json:"amount"`
}

// The provider keeps its books in two tables of the test's schema, so that
// every process, a killed one included, writes to the same provider:
// provider_requests has every call it received, provider_calls the effects,
// one per idempotency key (a second call with a key is accepted and does
// nothing, as Stripe answers it from its cache).
var taskProviderTables = []string{
	`CREATE TABLE provider_requests (seq bigserial PRIMARY KEY, idempotency_key text NOT NULL, task_key text NOT NULL,
    attempt int NOT NULL, proc text NOT NULL)`,
	`CREATE TABLE provider_calls (idempotency_key text PRIMARY KEY, task_key text NOT NULL, amount bigint NOT NULL, proc text NOT NULL)`,
}

// taskExecer is where the provider writes: a pool, its own in every process.
type taskExecer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// providerSend is one call to the provider, committed on its own: the
// request is recorded, and the effect once per idempotency key.
func providerSend(ctx context.Context, db taskExecer, proc string, run idempotency.TaskRun[taskReceipt]) error {
	_, err := db.Exec(ctx, `WITH request AS (
    INSERT INTO provider_requests (idempotency_key, task_key, attempt, proc) VALUES ($1, $2, $3, $4)
)
INSERT INTO provider_calls (idempotency_key, task_key, amount, proc) VALUES ($1, $2, $5, $4)
ON CONFLICT (idempotency_key) DO NOTHING`, run.IdempotencyKey, run.Key, run.Attempt, proc, run.Args.Amount)
	return err
}

// newTaskApp is a faultApp with the provider's tables.
func newTaskApp(t *testing.T) *faultApp {
	t.Helper()
	a := newFaultApp(t)
	for _, q := range taskProviderTables {
		_, err := a.db.Pool.Exec(t.Context(), q)
		require.NoError(t, err, q)
	}
	return a
}

// withReceipts makes the handlers of a's processes enqueue the invoice's
// send-receipt task in the event's transaction; the task calls the
// provider on db, then after when set: where a fault strikes.
func (a *faultApp) withReceipts(db taskExecer, after func(ctx context.Context, proc string, run idempotency.TaskRun[taskReceipt]) error) {
	a.tasks = func(hs *idempotency.Handlers, proc string) func(context.Context, idempotency.Tx, idempotency.Event[faultInvoice]) error {
		receipt := idempotency.NewTask(hs, receiptTask, func(ctx context.Context, run idempotency.TaskRun[taskReceipt]) error {
			if err := providerSend(ctx, db, proc, run); err != nil {
				return err
			}
			if after != nil {
				return after(ctx, proc, run)
			}
			return nil
		})
		return func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[faultInvoice]) error {
			_, err := receipt.Enqueue(ctx, tx, ev.Object.ID, taskReceipt{Account: ev.Object.Metadata["account_id"], Amount: 100})
			return err
		}
	}
}

// receiptRuns is what became of an invoice's task.
type receiptRuns struct {
	attempt  int // the inbox's count
	requests int // calls the provider received
}

// requireReceipts checks the tasks and the provider after a scenario in
// which events were sent: exactly one send-receipt task per invoice of
// events, processed, and no other task; exactly one effect at the
// provider per task, with the task's arguments, under one idempotency key
// shared by every call for the task and by no other task. It returns what became of each
// invoice's task.
func (a *faultApp) requireReceipts(t *testing.T, events []faultEvent) map[string]receiptRuns {
	t.Helper()
	ctx := t.Context()
	query := func(q string, scan func(pgx.CollectableRow) error) {
		t.Helper()
		rows, err := a.db.Pool.Query(ctx, q)
		require.NoError(t, err, q)
		_, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) { return struct{}{}, scan(row) })
		require.NoError(t, err, q)
	}
	want := map[string]idempotency.InboxState{}
	for _, ev := range events {
		want[receiptTaskID(ev.Invoice)] = idempotency.InboxProcessed
	}
	got := map[string]idempotency.InboxState{}
	out := map[string]receiptRuns{}
	query(`SELECT event_id, state, attempt FROM idempotency_inbox WHERE kind = 'task'`, func(row pgx.CollectableRow) error {
		var id string
		var st idempotency.InboxState
		var attempt int
		if err := row.Scan(&id, &st, &attempt); err != nil {
			return err
		}
		got[id] = st
		out[strings.TrimPrefix(id, receiptTaskPrefix)] = receiptRuns{attempt: attempt}
		return nil
	})
	require.Equal(t, want, got, "one task per invoice, every one processed")

	keys := map[string]string{} // invoice → the idempotency key of its calls
	query(`SELECT task_key, min(idempotency_key), count(DISTINCT idempotency_key), count(*) FROM provider_requests GROUP BY task_key`,
		func(row pgx.CollectableRow) error {
			var inv, key string
			var distinct, n int
			if err := row.Scan(&inv, &key, &distinct, &n); err != nil {
				return err
			}
			require.Equal(t, 1, distinct, "the calls for %s carried different idempotency keys", inv)
			require.NotEmpty(t, key, "the idempotency key of %s", inv)
			keys[inv] = key
			r, ok := out[inv]
			require.True(t, ok, "the provider was called for %s, which has no task", inv)
			r.requests = n
			out[inv] = r
			return nil
		})
	effects := map[string]int{}
	query(`SELECT task_key, idempotency_key, amount FROM provider_calls`, func(row pgx.CollectableRow) error {
		var inv, key string
		var amount int64
		if err := row.Scan(&inv, &key, &amount); err != nil {
			return err
		}
		effects[inv]++
		require.Equal(t, keys[inv], key, "the effect of %s under its calls' key", inv)
		require.Equal(t, int64(100), amount, "the task's arguments reached the provider")
		return nil
	})
	wantEffects := map[string]int{}
	for id := range want {
		wantEffects[strings.TrimPrefix(id, receiptTaskPrefix)] = 1
	}
	require.Equal(t, wantEffects, effects, "one effect at the provider per invoice")
	tasksByKey := map[string]string{}
	for inv, key := range keys {
		require.NotContains(t, tasksByKey, key, "tasks %s and %s share an idempotency key", inv, tasksByKey[key])
		tasksByKey[key] = inv
	}
	for inv, r := range out {
		require.GreaterOrEqual(t, r.attempt, r.requests, "task %s: more calls than attempts", inv)
	}
	return out
}

// providerRequests are the provider's calls, in the order received.
func (a *faultApp) providerRequests(t *testing.T) []providerRequest {
	t.Helper()
	rows, err := a.db.Pool.Query(t.Context(), `SELECT idempotency_key, task_key, attempt, proc FROM provider_requests ORDER BY seq`)
	require.NoError(t, err)
	reqs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[providerRequest])
	require.NoError(t, err)
	return reqs
}

type providerRequest struct {
	Key, Task string
	Attempt   int
	Proc      string
}

// helperTaskSent is what the worker process of TestPgxTaskWorkerKilled says
// once the provider accepted its call.
const helperTaskSent = "helper worker: the provider accepted the task's call"

// TestHelperTaskWorker is not a test: it is the worker process that
// TestPgxTaskWorkerKilled starts and kills. It runs an Inbox that applies
// the event, which enqueues the task, then runs the task: the provider
// accepts the call, and the worker says so and hangs before its attempt is
// recorded, until the process is killed.
func TestHelperTaskWorker(t *testing.T) {
	pool, store := helperWorkerStore(t, "TestPgxTaskWorkerKilled")
	a := &faultApp{runs: map[string]int{}}
	a.withReceipts(pool, func(context.Context, string, idempotency.TaskRun[taskReceipt]) error {
		fmt.Println(helperTaskSent)
		select {} // until SIGKILL, whatever the attempt's timeout
	})
	// The default lease, a minute: the parent takes it over by its clock.
	in, err := idempotency.NewInbox(store, a.handlers("child"), idempotency.InboxConfig{PollInterval: 100 * time.Millisecond, Logger: discardLogger()})
	require.NoError(t, err)
	require.NoError(t, in.Run(context.Background()))
}

// TestPgxTaskWorkerKilled kills a worker process with SIGKILL after the
// provider accepted its task's call and before the attempt was recorded.
// Once the lease has expired (the parent's inbox clock is past it: nobody
// waits for it) the parent's inbox runs the task again, as attempt 2,
// with the same idempotency key: the provider receives two calls and makes
// one effect, and the task is processed. Attempt 2 reports the killed
// attempt as it starts, once (failed, State failed, ErrLeaseExpired).
func TestPgxTaskWorkerKilled(t *testing.T) {
	t.Parallel()
	a := newTaskApp(t)
	a.withReceipts(a.db.Pool, nil)
	clock := idempotencytest.NewClock(time.Now())
	p := a.process(t, "parent", idempotency.InboxConfig{Now: clock.Now, PollInterval: 100 * time.Millisecond})
	ev := faultEvent{ID: "evt_task_killed", Type: "invoice.paid", Invoice: "in_task_killed", Account: "acct_task_killed"}
	a.sendAll(t, []http.Handler{p.handler}, []faultEvent{ev}, 1)
	id := receiptTaskID(ev.Invoice)

	w := a.startHelperWorker(t, "TestHelperTaskWorker", helperTaskSent)
	w.await(t, "its task's provider call")
	require.Equal(t, idempotency.InboxProcessed, a.record(t, ev.ID).State, "the worker applied the event, which enqueued the task")
	r := a.record(t, id)
	require.Equal(t, idempotency.InboxProcessing, r.State)
	require.Equal(t, 1, r.Attempt)
	first := a.providerRequests(t)
	require.Len(t, first, 1, "the provider accepted the call")
	w.kill(t)
	r = a.record(t, id)
	require.Equal(t, idempotency.InboxProcessing, r.State, "the killed attempt was not recorded")

	clock.Advance(pastHelperLease)
	p.run(t)
	faultAwait(t, 30*time.Second, "the task processed", func() bool { return a.record(t, id).State == idempotency.InboxProcessed })
	p.stop()

	r = a.record(t, id)
	require.Equal(t, 2, r.Attempt, "the killed worker's attempt counts")
	reqs := a.providerRequests(t)
	require.Equal(t, []providerRequest{
		{Key: first[0].Key, Task: ev.Invoice, Attempt: 1, Proc: "child"},
		{Key: first[0].Key, Task: ev.Invoice, Attempt: 2, Proc: "parent"},
	}, reqs, "two calls, with the same idempotency key")
	runs := a.requireReceipts(t, []faultEvent{ev})
	require.Equal(t, receiptRuns{attempt: 2, requests: 2}, runs[ev.Invoice])
	results := a.attemptResults(id)
	require.Len(t, results, 2, "the killed attempt, reported by the parent's, and the parent's")
	require.Equal(t, 1, results[0].Attempt)
	require.Equal(t, idempotency.OutcomeFailed, results[0].Outcome)
	require.Equal(t, idempotency.InboxFailed, results[0].State)
	require.ErrorIs(t, results[0].Err, idempotency.ErrLeaseExpired)
	require.Equal(t, idempotency.OutcomeProcessed, results[1].Outcome)
	require.Equal(t, 2, results[1].Attempt)
	a.requireExactlyOnce(t, []faultEvent{ev})
	t.Logf("task %s: %d attempts, %d provider requests, 1 effect", id, r.Attempt, len(reqs))
}

// TestPgxTaskDatabaseRestart crashes PostgreSQL (immediate shutdown; the
// start runs crash recovery) while a burst of events that enqueue tasks
// (one in five a twin, enqueuing its invoice's task again) comes in, with
// three events inside their transactions (their enqueues in them) and three
// tasks between the provider's acceptance and the record of their
// attempt. Every invoice ends with exactly one task, processed, and one
// effect at the provider: no task lost, none doubled.
func TestPgxTaskDatabaseRestart(t *testing.T) {
	// Not parallel: it stops the shared server.
	cluster := pgtest.Server(t)
	a := newTaskApp(t)
	tasksGate := newFaultGate(3)
	a.withReceipts(a.db.Pool, func(ctx context.Context, proc string, run idempotency.TaskRun[taskReceipt]) error {
		return tasksGate.hook(ctx, nil, proc, run.ID)
	})
	// Over TCP, as in production: the pool's connections die with the
	// server and are found stale afterwards.
	clock := new(leapClock)
	p := a.processOn(t, "main", cluster.TCP(t, a.db.URL), idempotency.InboxConfig{
		Lease: faultLease, Timeout: faultTimeout, PollInterval: 100 * time.Millisecond, Backoff: faultBackoff,
		Now: clock.Now,
	})
	eventsGate := newFaultGate(3)
	a.setHook(eventsGate.hook)
	p.run(t)
	t.Cleanup(eventsGate.open)
	t.Cleanup(tasksGate.open)

	events := faultEvents("taskrestart", 200, 5)
	// Each sender sends its first events before the crash, the rest after.
	const senders, before = 8, 10
	crashed := make(chan struct{})
	tr := a.startTraffic(t, []http.Handler{p.handler}, senders, func(s, k int) (faultEvent, bool) {
		i := s + k*senders
		if i >= len(events) {
			return faultEvent{}, false
		}
		if k == before {
			select {
			case <-crashed:
			case <-t.Context().Done():
				return faultEvent{}, false
			}
		}
		return events[i], true
	})
	heldEvents := eventsGate.await(t, 3)
	heldTasks := tasksGate.await(t, 3)
	faultAwait(t, 30*time.Second, "the events before the crash accepted", func() bool { return tr.accepted.Load() == senders*before })

	cluster.Kill(t)
	close(crashed)
	eventsGate.open()
	tasksGate.open()
	tr.awaitEveryRefused(t)
	// The held attempts end while the database is down: the events'
	// commits fail, and so does recording the tasks' success; only their
	// leases' expiry brings them back.
	for _, id := range append(heldEvents, heldTasks...) {
		faultAwait(t, 30*time.Second, "the held attempt of "+id+" reported", func() bool { return len(a.attemptResults(id)) > 0 })
	}
	for _, id := range heldEvents {
		require.Error(t, a.attemptResults(id)[0].Err, "%s committed with the database down", id)
	}
	cluster.Start(t)
	clock.leapPastLease()
	tr.wg.Wait()

	invoices := map[string]bool{}
	for _, ev := range events {
		invoices[ev.Invoice] = true
	}
	a.awaitDrained(t, len(events)+len(invoices), 2*time.Minute)
	p.stop()

	require.Len(t, tr.sent, len(events))
	for status := range tr.statuses {
		require.Contains(t, []int{http.StatusOK, http.StatusServiceUnavailable}, status, "answers %v", tr.statuses)
	}
	a.requireExactlyOnce(t, events)
	a.requireRetried(t, heldEvents, "the database crashed")
	runs := a.requireReceipts(t, events)
	for _, id := range heldTasks {
		r := runs[strings.TrimPrefix(id, receiptTaskPrefix)]
		require.GreaterOrEqual(t, r.attempt, 2, "%s was accepted by the provider, not recorded, when the database crashed", id)
		require.GreaterOrEqual(t, r.requests, 2, "%s: the provider was called again", id)
	}
	requests, retried := 0, 0
	for _, r := range runs {
		requests += r.requests
		if r.attempt > 1 {
			retried++
		}
	}
	t.Logf("%d events (%d invoices): answers by status %v; %d tasks, %d run more than once, %d provider requests, %d effects",
		len(events), len(invoices), tr.statuses, len(runs), retried, requests, len(runs))
}

// TestPgxTaskTwoProcesses runs two processes on one schema, each with a
// pool, handlers and four workers of its own; 100 events, sent to both,
// enqueue 100 tasks. Under valid leases no task runs twice: each is run
// once, in one attempt, the provider receives one call per task, and both
// processes ran tasks.
func TestPgxTaskTwoProcesses(t *testing.T) {
	t.Parallel()
	a := newTaskApp(t)
	a.withReceipts(a.db.Pool, nil)
	cfg := idempotency.InboxConfig{Workers: 4, PollInterval: 100 * time.Millisecond}
	one, two := a.process(t, "one", cfg), a.process(t, "two", cfg)
	one.run(t)
	two.run(t)
	events := faultEvents("tasktwo", 100, 0)
	a.sendAll(t, []http.Handler{one.handler, two.handler}, events, 8)
	a.awaitDrained(t, 2*len(events), 5*time.Minute)
	one.stop()
	two.stop()

	a.requireExactlyOnce(t, events)
	runs := a.requireReceipts(t, events)
	for inv, r := range runs {
		require.Equal(t, receiptRuns{attempt: 1, requests: 1}, r, "task of %s", inv)
	}
	require.Equal(t, int64(2*len(events)), one.attempts.Load()+two.attempts.Load(), "one attempt per event and per task")
	byProc := map[string]int{}
	for _, req := range a.providerRequests(t) {
		byProc[req.Proc]++
	}
	t.Logf("tasks run by process: %v", byProc)
	require.NotZero(t, byProc["one"], "process one ran no task")
	require.NotZero(t, byProc["two"], "process two ran no task")
}

// TestPgxTaskRoundTrips counts what tasks cost on PostgreSQL: in a handler,
// Enqueue is one round trip, whether it stores the task or finds it
// enqueued before (by this transaction or another event's); an attempt of
// the task is one round trip, its settle, whether it succeeded, failed or
// was snoozed.
func TestPgxTaskRoundTrips(t *testing.T) {
	t.Parallel()
	rt := &roundTrips{}
	db := pgtest.NewWithConfig(t, func(c *pgxpool.Config) {
		c.MaxConns = 1 // the warm-up prepares every statement the counted calls use
		c.ConnConfig.Tracer = rt
	})
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(t.Context()))
	count := func(f func()) int64 {
		before := rt.n.Load()
		f()
		return rt.n.Load() - before
	}

	hs := idempotency.NewHandlers()
	var mu sync.Mutex
	var enqueues []string // per Enqueue: enqueued, and its round trips
	receipt := idempotency.NewTask(hs, receiptTask, func(_ context.Context, run idempotency.TaskRun[string]) error {
		switch {
		case strings.HasSuffix(run.Key, "_fail") && run.Attempt == 1:
			return errors.New("provider: 503")
		case strings.HasSuffix(run.Key, "_snooze"):
			return idempotency.Snooze(time.Hour)
		}
		return nil
	})
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[pgInboxObject]) error {
		for range 2 { // the second finds the task enqueued by the first
			var enqueued bool
			var err error
			n := count(func() { enqueued, err = receipt.Enqueue(ctx, tx, ev.Object.ID, ev.ID) })
			if err != nil {
				return err
			}
			mu.Lock()
			enqueues = append(enqueues, fmt.Sprintf("%t %d", enqueued, n))
			mu.Unlock()
		}
		return nil
	})
	h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	// PollOnly: no notification goes out behind the counted calls' backs.
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{PollOnly: true, Backoff: func(int) time.Duration { return 0 }, Logger: discardLogger()})
	require.NoError(t, err)
	deliver := func(eventID, invoice string) []string {
		t.Helper()
		mu.Lock()
		enqueues = nil
		mu.Unlock()
		a := idempotencytest.Deliver(h, invoicePayload(t, eventID, invoice, "acct_rt"), testSecret)
		require.Equal(t, http.StatusOK, a.Status, a.Body)
		require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
		mu.Lock()
		defer mu.Unlock()
		return enqueues
	}
	lease := func(want int) []idempotency.InboxLeased {
		t.Helper()
		leased, err := idempotency.LeaseInbox(t.Context(), in, 10)
		require.NoError(t, err)
		require.Len(t, leased, want)
		return leased
	}
	attempt := func(l idempotency.InboxLeased) int64 {
		return count(func() { idempotency.ApplyLeased(t.Context(), in, l) })
	}
	state := func(invoice string) (idempotency.InboxState, int) {
		r, ok, err := in.Lookup(t.Context(), receiptTaskID(invoice))
		require.NoError(t, err)
		require.True(t, ok)
		return r.State, r.Attempt
	}

	deliver("evt_warm", "in_warm_fail")
	for range 2 { // a failed attempt and a successful one
		for _, l := range lease(1) {
			attempt(l)
		}
	}

	require.Equal(t, []string{"true 1", "false 1"}, deliver("evt_rt", "in_rt"), "Enqueue: stored, then found in the transaction")
	require.Equal(t, []string{"false 1", "false 1"}, deliver("evt_rt_twin", "in_rt"), "Enqueue in another event's transaction: found")
	leased := lease(1)
	require.Equal(t, int64(1), attempt(leased[0]), "a task's attempt that succeeds: its settle")
	st, n := state("in_rt")
	require.Equal(t, idempotency.InboxProcessed, st)
	require.Equal(t, 1, n)

	deliver("evt_rt_fail", "in_rt_fail")
	require.Equal(t, int64(1), attempt(lease(1)[0]), "a task's attempt that fails: its settle")
	st, n = state("in_rt_fail")
	require.Equal(t, idempotency.InboxFailed, st)
	require.Equal(t, 1, n)
	require.Equal(t, int64(1), attempt(lease(1)[0]), "the retry that succeeds")
	st, n = state("in_rt_fail")
	require.Equal(t, idempotency.InboxProcessed, st)
	require.Equal(t, 2, n)

	deliver("evt_rt_snooze", "in_rt_snooze")
	require.Equal(t, int64(1), attempt(lease(1)[0]), "a task's attempt that snoozes: its settle")
	st, n = state("in_rt_snooze")
	require.Equal(t, idempotency.InboxPending, st)
	require.Equal(t, 0, n, "a snoozed attempt does not count")
}
