package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// Misuse of tasks, on the memory store: refused where it is made (NewTask
// panics, Enqueue fails and stores nothing), or, when it shows only as a
// task runs, turned into a failed attempt that is retried or a dead letter
// that says why, never a lost task nor a crashed worker. The store-neutral
// semantics are in idempotencytest's conformance suite (taskTests).

// misuseArgs are the arguments of the tasks below.
type misuseArgs struct {
	Amount int `json:"amount"`
}

// misuseRig is a memory store and a fake clock, to enqueue tasks in an
// event's transaction and run them with Inboxes built on any Handlers.
type misuseRig struct {
	store *idempotency.MemoryStore
	clock *idempotencytest.Clock
}

func newMisuseRig() *misuseRig {
	return &misuseRig{
		store: idempotency.NewMemoryStore(),
		clock: idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)),
	}
}

// inbox is an Inbox on the rig's store and clock that runs the tasks of hs.
func (r *misuseRig) inbox(t *testing.T, hs *idempotency.Handlers, cfg idempotency.InboxConfig) *idempotency.Inbox {
	t.Helper()
	cfg.Now = r.clock.Now
	cfg.Logger = discardLogger()
	if cfg.Backoff == nil {
		cfg.Backoff = func(int) time.Duration { return time.Minute }
	}
	in, err := idempotency.NewInbox(r.store, hs, cfg)
	require.NoError(t, err)
	return in
}

// enqueue runs enqueue in event eventID's transaction, received at the
// rig's clock, and requires it to commit.
func (r *misuseRig) enqueue(t *testing.T, eventID string, enqueue func(ctx context.Context, tx idempotency.Tx) error) {
	t.Helper()
	out, err := r.store.Run(t.Context(), idempotency.Claim{EventID: eventID, EventType: "invoice.paid", ReceivedAt: r.clock.Now()}, enqueue)
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
}

// misuseWork runs in's due tasks and requires want attempts.
func misuseWork(t *testing.T, in *idempotency.Inbox, want int) {
	t.Helper()
	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, want, n, "attempts made by WorkDue")
}

func misuseLookup(t *testing.T, in *idempotency.Inbox, id string) idempotency.InboxRecord {
	t.Helper()
	r, ok, err := in.Lookup(t.Context(), id)
	require.NoError(t, err)
	require.True(t, ok, "%s is not in the inbox", id)
	return r
}

// recoverError runs f and returns the error it panicked with.
func recoverError(t *testing.T, f func()) (err error) {
	t.Helper()
	defer func() {
		v := recover()
		require.NotNil(t, v, "no panic")
		e, ok := v.(error)
		require.True(t, ok, "panicked with a %T, not an error: %v", v, v)
		err = e
	}()
	f()
	return nil
}

func noopTask(context.Context, idempotency.TaskRun[misuseArgs]) error { return nil }

// TestNewTaskRefusesMisuse: NewTask panics, as On does, for a name that
// cannot be part of task ids and idempotency keys, a nil func, a nil
// Handlers or a name already taken.
func TestNewTaskRefusesMisuse(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	for _, name := range []string{"", "Send-Receipt", "send:receipt", strings.Repeat("a", 101), "-send", ".send", "send receipt", "reçu"} {
		err := recoverError(t, func() { idempotency.NewTask(hs, name, noopTask) })
		require.ErrorContains(t, err, "is not 1 to 100 of a-z, 0-9", "name %q", name)
	}
	require.NotPanics(t, func() { idempotency.NewTask(hs, strings.Repeat("a", 100), noopTask) }, "100 characters is the limit")
	require.NotPanics(t, func() { idempotency.NewTask(hs, "0send-receipt.v2_final", noopTask) })

	require.ErrorContains(t, recoverError(t, func() { idempotency.NewTask[misuseArgs](hs, "send-receipt", nil) }), "nil func")
	require.ErrorContains(t, recoverError(t, func() { idempotency.NewTask(nil, "send-receipt", noopTask) }), "nil *Handlers")

	task := idempotency.NewTask(hs, "send-receipt", noopTask)
	require.Equal(t, "send-receipt", task.Name())
	err := recoverError(t, func() { idempotency.NewTask(hs, "send-receipt", noopTask) })
	require.ErrorIs(t, err, idempotency.ErrDuplicateRegistration)
	require.ErrorContains(t, err, "send-receipt")
	err = recoverError(t, func() {
		idempotency.NewTask(hs, "send-receipt", func(context.Context, idempotency.TaskRun[string]) error { return nil })
	})
	require.ErrorIs(t, err, idempotency.ErrDuplicateRegistration, "another type under a taken name")
}

// TestTaskEnqueueRefusesBadKeys: a key that is empty, holds a NUL or
// invalid UTF-8, or exceeds 200 bytes is refused with ErrInvalidKey before
// anything is stored, and the transaction stays usable: it commits the
// valid task alone.
// A task registered after an inbox was built on its Handlers is refused:
// the inbox would never run it. An inbox that is gone is forgotten: one
// Handlers shared by many tests' inboxes keeps none of them, nor their
// stores, and a committed task wakes only the inboxes in use.
func TestHandlersHoldTheirInboxesWeakly(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	type args struct{}
	idempotency.NewTask(hs, "first", func(context.Context, idempotency.TaskRun[args]) error { return nil })
	in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{})
	require.NoError(t, err)
	require.PanicsWithError(t, `idempotency: NewTask "second": registered after NewInbox; register tasks first`, func() {
		idempotency.NewTask(hs, "second", func(context.Context, idempotency.TaskRun[args]) error { return nil })
	})
	require.Equal(t, 1, idempotency.LiveInboxes(hs))
	runtime.KeepAlive(in)

	for range 50 {
		_, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{})
		require.NoError(t, err)
	}
	// Polled, with a collection each time: not a synchronisation.
	require.Eventually(t, func() bool {
		runtime.GC()
		return idempotency.LiveInboxes(hs) == 0
	}, 10*time.Second, 10*time.Millisecond, "inboxes no longer in use are forgotten")
}

func TestTaskEnqueueRefusesBadKeys(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	hs := idempotency.NewHandlers()
	task := idempotency.NewTask(hs, "send-receipt", noopTask)
	in := r.inbox(t, hs, idempotency.InboxConfig{})
	longest := strings.Repeat("k", 200)
	r.enqueue(t, "evt_badkeys", func(ctx context.Context, tx idempotency.Tx) error {
		for name, key := range map[string]string{
			"empty": "", "NUL": "in_\x00", "invalid UTF-8": "in_\xff", "201 bytes": longest + "k",
		} {
			enqueued, err := task.Enqueue(ctx, tx, key, misuseArgs{Amount: 1})
			require.ErrorIs(t, err, idempotency.ErrInvalidKey, "a key %s", name)
			require.False(t, enqueued, "a key %s", name)
		}
		enqueued, err := task.Enqueue(ctx, tx, longest, misuseArgs{Amount: 1})
		require.NoError(t, err, "200 bytes is the limit")
		require.True(t, enqueued)
		return nil
	})
	recs, err := in.List(t.Context(), idempotency.InboxFilter{Kind: idempotency.KindTask})
	require.NoError(t, err)
	require.Len(t, recs, 1, "only the valid key was stored")
	require.Equal(t, task.ID(longest), recs[0].EventID)
}

// foreignTx is a Tx that no store made: a handler's test double.
type foreignTx struct{}

func (foreignTx) Guard(context.Context, string, string) (bool, error) { return true, nil }
func (foreignTx) AfterCommit(func(context.Context))                   {}
func (foreignTx) EventID() string                                     { return "evt_foreign" }
func (foreignTx) EventType() string                                   { return "invoice.paid" }

// TestTaskEnqueueNeedsStoreTx: Enqueue with a Tx that is not a store's
// fails with ErrNeedsStoreTx, and with a store's Tx whose transaction
// has ended with ErrTxDone; neither stores a task.
func TestTaskEnqueueNeedsStoreTx(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	hs := idempotency.NewHandlers()
	task := idempotency.NewTask(hs, "send-receipt", noopTask)
	in := r.inbox(t, hs, idempotency.InboxConfig{})

	enqueued, err := task.Enqueue(t.Context(), foreignTx{}, "in_1", misuseArgs{})
	require.ErrorIs(t, err, idempotency.ErrNeedsStoreTx)
	require.ErrorContains(t, err, "foreignTx", "the error names the Tx it got")
	require.False(t, enqueued)

	var leaked idempotency.Tx
	r.enqueue(t, "evt_leak", func(_ context.Context, tx idempotency.Tx) error {
		leaked = tx
		return nil
	})
	enqueued, err = task.Enqueue(t.Context(), leaked, "in_1", misuseArgs{})
	require.ErrorIs(t, err, idempotency.ErrTxDone)
	require.False(t, enqueued)
	// With the handler's context, done by now, it is still ErrTxDone, as on
	// PostgreSQL; and so is a Guard.
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	enqueued, err = task.Enqueue(cancelled, leaked, "in_1", misuseArgs{})
	require.ErrorIs(t, err, idempotency.ErrTxDone)
	require.False(t, enqueued)
	_, err = leaked.Guard(cancelled, "invoice", "in_1")
	require.ErrorIs(t, err, idempotency.ErrTxDone)

	st, err := in.Stats(t.Context())
	require.NoError(t, err)
	for s, n := range st.TaskCounts {
		require.Zero(t, n, "tasks %s", s)
	}
}

// TestTaskEnqueueRacingTheCommit: a handler that returns while a goroutine
// of its own enqueues a task (a misuse: a Tx is the handler's only while
// it runs) gets, each time, either the task committed with its event,
// ErrTxDone and no task, or, when the Enqueue still ran as the handler
// returned, the attempt failed with ErrTxBusy and rolled back with the
// task; the MemoryStore stays usable. The commit used to
// find the task's key held without its row: it panicked holding the
// store's lock, and every later call on the store hung.
func TestTaskEnqueueRacingTheCommit(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	hs := idempotency.NewHandlers()
	task := idempotency.NewTask(hs, "late", func(context.Context, idempotency.TaskRun[int]) error { return nil })
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	const events = 2000
	enqueued := 0
	for i := range events {
		late := make(chan error, 1)
		var ok bool
		ran := make(chan error, 1)
		go func() { // a Run that hangs fails the test, not the whole run
			_, err := store.Run(t.Context(), idempotency.Claim{EventID: fmt.Sprint("evt_late_", i), EventType: "invoice.paid"},
				func(ctx context.Context, tx idempotency.Tx) error {
					go func() {
						var err error
						ok, err = task.Enqueue(context.Background(), tx, fmt.Sprint("k", i), i)
						late <- err
					}()
					return nil
				})
			ran <- err
		}()
		runErr := recv(t, ran, "Run")
		lateErr := recv(t, late, "the late Enqueue")
		if runErr != nil {
			require.ErrorIs(t, runErr, idempotency.ErrTxBusy) // rolled back, the task with it
			continue
		}
		if err := lateErr; err != nil {
			require.ErrorIs(t, err, idempotency.ErrTxDone)
			require.False(t, ok)
			continue
		}
		require.True(t, ok)
		enqueued++
	}
	st, err := in.Stats(t.Context())
	require.NoError(t, err)
	require.Equal(t, enqueued, st.TaskCounts[idempotency.InboxPending], "every task reported enqueued is stored, and only those")
	t.Logf("%d of %d late Enqueues came before the commit", enqueued, events)
}

// TestTaskEnqueueTwiceWhileAnotherHoldsTheKey: two goroutines of one
// handler enqueue the same task while another event's transaction holds
// its key; that one rolls back. One of the two enqueues it, the other is
// refused with ErrTxBusy while the first waits (a transaction runs one
// statement at a time), and the transaction commits it once. When
// the row was put in before the key was taken, the goroutine that lost
// the race removed it, and the commit found the key without its row: it
// panicked holding the MemoryStore's lock and the store hung.
func TestTaskEnqueueTwiceWhileAnotherHoldsTheKey(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	hs := idempotency.NewHandlers()
	task := idempotency.NewTask(hs, "once", func(context.Context, idempotency.TaskRun[int]) error { return nil })
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	waiting := func(n int) {
		require.Eventually(t, func() bool { return idempotency.MemoryWaiting(store) == n }, 10*time.Second, time.Millisecond)
	}

	holding, rollBack := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := store.Run(t.Context(), idempotency.Claim{EventID: "evt_holds", EventType: "invoice.paid"},
			func(ctx context.Context, tx idempotency.Tx) error {
				if _, err := task.Enqueue(ctx, tx, "k", 1); err != nil {
					return err
				}
				close(holding)
				<-rollBack
				return errors.New("rolled back")
			})
		first <- err
	}()
	recv(t, holding, "the first transaction holds the key")

	var enqueued atomic.Int32
	second := make(chan error, 1)
	go func() {
		_, err := store.Run(t.Context(), idempotency.Claim{EventID: "evt_twice", EventType: "invoice.paid"},
			func(ctx context.Context, tx idempotency.Tx) error {
				errs := make(chan error, 1)
				go func() {
					ok, err := task.Enqueue(ctx, tx, "k", 2)
					if ok {
						enqueued.Add(1)
					}
					errs <- err
				}()
				waiting(1)
				// A transaction runs one statement at a time: the second
				// Enqueue is refused while the first waits, as PostgreSQL's
				// connection would refuse it, rather than racing it.
				if ok, err := task.Enqueue(ctx, tx, "k", 2); ok || !errors.Is(err, idempotency.ErrTxBusy) {
					return fmt.Errorf("a second Enqueue while the first waits: %v, %w", ok, err)
				}
				close(rollBack)
				return <-errs
			})
		second <- err
	}()
	require.ErrorContains(t, recv(t, first, "the first Run"), "rolled back")
	require.NoError(t, recv(t, second, "the second Run"))
	require.EqualValues(t, 1, enqueued.Load(), "one Enqueue reports the task enqueued")
	st, err := in.Stats(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, st.TaskCounts[idempotency.InboxPending])
}

// TestTaskArgsThatNoLongerDecodeAreDeadLettered: a task enqueued with
// arguments of one type and run by a process that registered the name with
// another type, into which they do not decode, is dead-lettered at once
// with an error that names the task; its func never runs.
func TestTaskArgsThatNoLongerDecodeAreDeadLettered(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	before := idempotency.NewHandlers()
	task := idempotency.NewTask(before, "send-receipt", noopTask)
	r.enqueue(t, "evt_v1", func(ctx context.Context, tx idempotency.Tx) error {
		_, err := task.Enqueue(ctx, tx, "in_1", misuseArgs{Amount: 500})
		return err
	})

	after := idempotency.NewHandlers()
	var ran atomic.Bool
	idempotency.NewTask(after, "send-receipt", func(context.Context, idempotency.TaskRun[struct {
		Amount string `json:"amount"` // was an int
	}]) error {
		ran.Store(true)
		return nil
	})
	in := r.inbox(t, after, idempotency.InboxConfig{})
	misuseWork(t, in, 1)
	rec := misuseLookup(t, in, task.ID("in_1"))
	require.Equal(t, idempotency.InboxDeadLetter, rec.State, "it can never decode: no retries")
	require.Equal(t, 1, rec.Attempt)
	require.Contains(t, rec.LastError, "decoding the arguments of task send-receipt")
	require.False(t, ran.Load(), "the func never ran")
	r.clock.Advance(24 * time.Hour)
	misuseWork(t, in, 0)
}

// TestTaskWithoutRegistrationIsRetried: a process that has no task
// registered under a stored task's name fails the attempt and retries it
// with backoff, so that a process that registers it (the next deployment)
// runs it: the task is not lost.
func TestTaskWithoutRegistrationIsRetried(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	hs := idempotency.NewHandlers()
	var runs []idempotency.TaskRun[misuseArgs]
	task := idempotency.NewTask(hs, "send-receipt", func(_ context.Context, run idempotency.TaskRun[misuseArgs]) error {
		runs = append(runs, run) // WorkDue runs on the test's goroutine
		return nil
	})
	r.enqueue(t, "evt_unregistered", func(ctx context.Context, tx idempotency.Tx) error {
		_, err := task.Enqueue(ctx, tx, "in_1", misuseArgs{Amount: 500})
		return err
	})

	old := r.inbox(t, idempotency.NewHandlers(), idempotency.InboxConfig{}) // a process without the task
	misuseWork(t, old, 1)
	rec := misuseLookup(t, old, task.ID("in_1"))
	require.Equal(t, idempotency.InboxFailed, rec.State)
	require.Equal(t, 1, rec.Attempt)
	require.Equal(t, `idempotency: no task registered as "send-receipt"`, rec.LastError)
	require.Equal(t, r.clock.Now().Add(time.Minute), rec.NextAttemptAt.UTC())

	in := r.inbox(t, hs, idempotency.InboxConfig{})
	misuseWork(t, in, 0) // not before its backoff
	r.clock.Advance(time.Minute)
	misuseWork(t, in, 1)
	require.Equal(t, idempotency.InboxProcessed, misuseLookup(t, in, task.ID("in_1")).State)
	require.Len(t, runs, 1)
	require.Equal(t, 2, runs[0].Attempt)
	require.Equal(t, misuseArgs{Amount: 500}, runs[0].Args)
}

// TestTaskWithoutRegistrationDeadLetters: a task no process registers
// is not retried for ever: like any failing attempt, the last of
// InboxConfig.MaxAttempts dead-letters it, with ErrTaskNotRegistered's
// text, where a redrive can find it once a process registers the task.
func TestTaskWithoutRegistrationDeadLetters(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	hs := idempotency.NewHandlers()
	task := idempotency.NewTask(hs, "send-receipt", func(context.Context, idempotency.TaskRun[misuseArgs]) error { return nil })
	r.enqueue(t, "evt_never_registered", func(ctx context.Context, tx idempotency.Tx) error {
		_, err := task.Enqueue(ctx, tx, "in_1", misuseArgs{})
		return err
	})
	var results misuseResults
	in := r.inbox(t, idempotency.NewHandlers(), idempotency.InboxConfig{MaxAttempts: 2, OnResult: results.add})
	misuseWork(t, in, 1)
	require.Equal(t, idempotency.InboxFailed, misuseLookup(t, in, task.ID("in_1")).State)
	r.clock.Advance(time.Minute)
	misuseWork(t, in, 1)
	rec := misuseLookup(t, in, task.ID("in_1"))
	require.Equal(t, idempotency.InboxDeadLetter, rec.State)
	require.Equal(t, 2, rec.Attempt)
	require.Equal(t, `idempotency: no task registered as "send-receipt"`, rec.LastError)
	results.mu.Lock()
	defer results.mu.Unlock()
	require.Len(t, results.all, 2)
	require.ErrorIs(t, results.all[1].Err, idempotency.ErrTaskNotRegistered)
	require.Equal(t, idempotency.InboxDeadLetter, results.all[1].State)
}

// misuseResults collects an inbox's Results, for InboxConfig.OnResult.
type misuseResults struct {
	mu  sync.Mutex
	all []idempotency.Result
}

func (rs *misuseResults) add(r idempotency.Result) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.all = append(rs.all, r)
}

func (rs *misuseResults) last(t *testing.T) idempotency.Result {
	t.Helper()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	require.NotEmpty(t, rs.all)
	return rs.all[len(rs.all)-1]
}

// TestTaskPanicIsAFailedAttempt: a TaskFunc that panics fails the attempt,
// with the panic in LastError and a PanicError (with its stack) in the
// Result; the worker goes on, and the task is retried. A panic whose value
// wraps Permanent, Snooze or Skip fails the same way: it is not
// dead-lettered, snoozed or skipped as if the func had returned it.
func TestTaskPanicIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	for name, value := range map[string]any{
		"a string":           "mailer exploded",
		"wrapping Permanent": fmt.Errorf("a helper's bug: %w", idempotency.Permanent(errors.New("card declined"))),
		"wrapping Snooze":    fmt.Errorf("a helper's bug: %w", idempotency.Snooze(time.Hour)),
		"wrapping Skip":      fmt.Errorf("a helper's bug: %w", idempotency.Skip("nothing to send")),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newMisuseRig()
			hs := idempotency.NewHandlers()
			task := idempotency.NewTask(hs, "send-receipt", func(_ context.Context, run idempotency.TaskRun[misuseArgs]) error {
				if run.Attempt == 1 {
					panic(value)
				}
				return nil
			})
			r.enqueue(t, "evt_panic", func(ctx context.Context, tx idempotency.Tx) error {
				_, err := task.Enqueue(ctx, tx, "in_1", misuseArgs{})
				return err
			})
			var rs misuseResults
			in := r.inbox(t, hs, idempotency.InboxConfig{OnResult: rs.add})
			misuseWork(t, in, 1)
			rec := misuseLookup(t, in, task.ID("in_1"))
			require.Equal(t, idempotency.InboxFailed, rec.State)
			require.Equal(t, 1, rec.Attempt)
			require.Contains(t, rec.LastError, fmt.Sprint("panicked: ", value))
			res := rs.last(t)
			require.Equal(t, idempotency.OutcomeFailed, res.Outcome)
			var p *idempotency.PanicError
			require.ErrorAs(t, res.Err, &p)
			require.Equal(t, value, p.Value)
			require.NotEmpty(t, p.Stack)

			r.clock.Advance(time.Minute)
			misuseWork(t, in, 1)
			require.Equal(t, idempotency.InboxProcessed, misuseLookup(t, in, task.ID("in_1")).State)
		})
	}
}

// TestTaskTimeout: a TaskFunc still running at InboxConfig.Timeout has its
// context cancelled; the attempt fails with ErrTimeout and is retried. Its
// error, Result.Err and the stored LastError, names the task that timed
// out, not a handler: no event handler ran in that attempt (it said
// "idempotency: handler timed out"). The retry returns nil past the
// Timeout, its effect done: it is processed (ErrTimeout's doc said any
// func still running then failed). On the fake clock of a synctest
// bubble: the attempt's lease and claim, which must come before the
// Timeout for the retry to be processed, take no time on it.
func TestTaskTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newMisuseRig()
		hs := idempotency.NewHandlers()
		task := idempotency.NewTask(hs, "send-receipt", func(ctx context.Context, run idempotency.TaskRun[misuseArgs]) error {
			timer := time.NewTimer(10 * time.Second)
			defer timer.Stop()
			select {
			case <-ctx.Done():
				if run.Attempt > 1 {
					return nil // past the Timeout too, but its effect done
				}
				return ctx.Err()
			case <-timer.C:
				return errors.New("the attempt's context was not cancelled at InboxConfig.Timeout")
			}
		})
		r.enqueue(t, "evt_slow", func(ctx context.Context, tx idempotency.Tx) error {
			_, err := task.Enqueue(ctx, tx, "in_1", misuseArgs{})
			return err
		})
		var rs misuseResults
		in := r.inbox(t, hs, idempotency.InboxConfig{Timeout: 100 * time.Millisecond, OnResult: rs.add})
		misuseWork(t, in, 1)
		res := rs.last(t)
		require.ErrorIs(t, res.Err, idempotency.ErrTimeout)
		require.ErrorIs(t, res.Err, context.DeadlineExceeded)
		rec := misuseLookup(t, in, task.ID("in_1"))
		require.Equal(t, idempotency.InboxFailed, rec.State)
		require.Contains(t, rec.LastError, idempotency.ErrTimeout.Error())
		for _, text := range []string{res.Err.Error(), rec.LastError} {
			require.Contains(t, text, "task send-receipt")
			require.NotContains(t, text, "handler")
		}

		// Returning nil once the Timeout has run out, its effect done, is
		// processed: only a returned error is wrapped in ErrTimeout.
		r.clock.Advance(time.Minute)
		misuseWork(t, in, 1)
		res = rs.last(t)
		require.NoError(t, res.Err)
		require.Equal(t, idempotency.OutcomeProcessed, res.Outcome)
		require.Equal(t, idempotency.InboxProcessed, misuseLookup(t, in, task.ID("in_1")).State)
	})
}
