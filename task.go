package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"regexp"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/seed-a84bb619/idempotency/internal/display"
)

// A Task is a side effect that must happen once per business key: the
// welcome email of a customer, the receipt of an invoice, the call that
// books a payment in the accounting system. A handler (or an action)
// enqueues it with [Task.Enqueue] inside the event's transaction, so the
// task is stored if and only if the handler's writes commit, and once per
// (task, key) ever: a retry, a twin event or another event type enqueuing
// the same key again changes nothing. "Ever" lasts as long as the task's
// inbox row: [PgxStore.Prune] deletes a finished task only when
// [Retention].Tasks sets a window, and a dead-lettered one after
// Retention.EventIDs plus Retention.DeadLetters (or Tasks, when longer);
// the key can then be enqueued again.
//
// An [Inbox]'s workers run tasks after the commit with the same leases,
// attempts, backoff, dead letter and redrive as events, in inbox mode and
// in synchronous mode alike (run [Inbox.Run] next to the [Handler]). A task
// runs at least once: a worker that dies after the provider accepted the
// call and before the task was recorded done leaves it to be run again.
// Every attempt gets the same [TaskRun.IdempotencyKey]; pass it to a
// provider that honours idempotency keys (Stripe's Idempotency-Key, most
// email and payment APIs) and the effect happens once.
//
// [Tx.AfterCommit] stays for what may be lost: it runs in the process, once,
// right after the commit, and a crash before it runs loses it (cache
// invalidation, metrics).
//
// Make a Task with [NewTask], at start-up, and share it: its methods are
// safe for concurrent use. The zero Task, or a nil one, is not usable: its
// Enqueue fails, and its Name and ID are "".
type Task[T any] struct {
	name string
	hs   *Handlers
}

// TaskFunc runs one attempt of a task. It returns nil when the effect
// happened; an error to retry it with backoff; [Permanent] to dead-letter
// it at once; [Snooze] to run it again later without counting the attempt;
// [Skip] when there is nothing to do any more (the task ends skipped, with
// the reason as its LastError).
// ctx carries InboxConfig.Timeout. A panic is an error, a [PanicError]
// whose text names the task.
type TaskFunc[T any] func(ctx context.Context, run TaskRun[T]) error

// TaskRun is one attempt of a task.
type TaskRun[T any] struct {
	// Task is the task's name and Key the key it was enqueued with.
	Task, Key string
	// ID is the task's id in the inbox, task:<name>:<key>: what
	// [Inbox.Lookup], [Inbox.List] and [Inbox.Redrive] know it by.
	ID string
	// Args are the arguments given to Enqueue, decoded from JSON. Stored
	// arguments that no longer decode into T (its type changed
	// incompatibly since they were enqueued) dead-letter the task at once,
	// its func not called, with an error that names the field and the
	// types, never a value: change T compatibly. A field whose JSON name
	// changed (other than in letter case alone, which encoding/json
	// matches either way) decodes as encoding/json decodes one absent
	// from the JSON, as its zero value, the stored value ignored and
	// nothing reported: keep a field's name while tasks stored before may
	// run.
	Args T
	// IdempotencyKey is the same for every attempt of the task, derived
	// from its name and key: the name, a "-" and 64 lowercase hex digits,
	// a form Stripe's Idempotency-Key and other providers accept. A redrive
	// keeps it. One key is for one request: a func that makes several
	// calls derives one for each with [Key] (Key(IdempotencyKey,
	// "customer")), and sends each with the same parameters on every
	// attempt, as Stripe refuses a key sent again to another endpoint or
	// with other parameters. Stripe answers a retry with the answer it
	// saved for the key, a decline or a 500 included, for a day. Nothing
	// else goes into it, not the store: two services (or two stores of
	// one) that call one Stripe account from tasks of one name for one
	// key send the same key, and the second is answered the first's
	// answer; give their tasks names of their own.
	IdempotencyKey string
	// Attempt counts the attempts since the task was enqueued or last
	// redriven (a redrive gives it a fresh budget, starting again at 1),
	// this one included; snoozed attempts do not count.
	Attempt int
}

// taskRegistration is one task's func, with T erased.
type taskRegistration struct {
	run func(ctx context.Context, row *inboxRow) error
}

// taskNamePattern is what a task name may be: it is part of task ids and
// idempotency keys, and of the log lines and metrics of operators.
var taskNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,99}$`)

// maxTaskKeyLen bounds a task's key.
const maxTaskKeyLen = 200

// NewTask registers fn as the task name in hs and returns the task, to
// enqueue from handlers. Register tasks before [NewInbox], which takes a
// snapshot.
//
// The name is in the task's id and its [TaskRun.IdempotencyKey]: a
// release that renames a task makes another one, which a later event
// enqueues and runs again, with another idempotency key, for a key the
// old name ran for; and the stored tasks of a name no release registers
// any more fail with [ErrTaskNotRegistered] until they are dead-lettered.
//
// NewTask panics on a programming error, as [On] does: a name that is not
// 1 to 100 of a-z, 0-9, '.', '_' and '-' (starting with a letter or a
// digit), a nil fn, a name already taken ([ErrDuplicateRegistration]), or
// a registration after [NewInbox] was called on hs. [NewTaskSafely]
// returns the error instead.
func NewTask[T any](hs *Handlers, name string, fn TaskFunc[T]) *Task[T] {
	t, err := NewTaskSafely(hs, name, fn)
	if err != nil {
		panic(err)
	}
	return t
}

// NewTaskSafely is [NewTask] returning the error instead of panicking;
// the error wraps [ErrDuplicateRegistration] when the name is taken. A
// refused task is not registered.
func NewTaskSafely[T any](hs *Handlers, name string, fn TaskFunc[T]) (*Task[T], error) {
	switch {
	case hs == nil:
		return nil, errorf("NewTask: nil *Handlers")
	case !taskNamePattern.MatchString(name):
		return nil, errorf("NewTask %q: name is not 1 to 100 of a-z, 0-9, '.', '_' and '-', starting with a letter or a digit", name)
	case fn == nil:
		return nil, errorf("NewTask %q: nil func", name)
	}
	if _, ok := hs.tasks[name]; ok {
		return nil, errorf("NewTask %q: %w: an earlier NewTask took the name", name, ErrDuplicateRegistration)
	}
	if hs.hasInbox() {
		// The inbox took a snapshot: it would never run this task.
		return nil, errorf("NewTask %q: registered after NewInbox; register tasks first", name)
	}
	if hs.tasks == nil {
		hs.tasks = make(map[string]taskRegistration)
	}
	hs.tasks[name] = taskRegistration{run: func(ctx context.Context, row *inboxRow) error {
		_, key, _ := parseTaskID(row.EventID)
		run := TaskRun[T]{Task: name, Key: key, ID: row.EventID, IdempotencyKey: taskIdempotencyKey(name, key), Attempt: row.Attempt}
		if err := json.Unmarshal(row.Payload, &run.Args); err != nil {
			// The arguments were encoded from a T: the type changed since.
			return Permanent(&argsDecodeError{task: name, err: err})
		}
		return fn(ctx, run)
	}}
	return &Task[T]{name: name, hs: hs}, nil
}

// Name is the task's name; "" on a Task that [NewTask] did not return (a
// zero or nil Task).
func (t *Task[T]) Name() string {
	if t == nil {
		return ""
	}
	return t.name
}

// ID is the inbox id of the task enqueued with key: task:<name>:<key>.
// It is "" on a Task that [NewTask] did not return (a zero or nil Task),
// which has no ids: [Inbox.Lookup] refuses "" rather than answer that a
// task of no name is not there.
func (t *Task[T]) ID(key string) string {
	if t.Name() == "" {
		return ""
	}
	return taskID(t.name, key)
}

// Enqueue stores the task for key with args (encoded as JSON) in tx, the
// transaction of the event being handled: it commits or rolls back with
// the handler's writes. It reports false, changing nothing, when the task
// was enqueued for key before (by any event, and its row was not pruned
// since: see [Task]), or earlier in this transaction; an enqueue of the
// same key in a transaction in flight waits for that transaction to end,
// as [Tx.Guard] does.
//
// The key names the effect, not the event: a customer id for a welcome
// email, an invoice id for a receipt. It is one for the store, whatever
// connected account the event came from: put the account in a key of an
// id that repeats across accounts (a capability's card_payments). It is
// in the task's id (task:<name>:<key>), which the log, idemctl, the
// dashboard and the otel subpackage's spans (messaging.message.id) show:
// an id, never personal data such as an email address. It
// must be 1 to 200 bytes of valid
// UTF-8 without NUL ([ErrInvalidKey]). Enqueue fails with
// [ErrNeedsStoreTx] for a Tx of another Store, and, storing nothing, on a
// Task that [NewTask] did not return (a zero or nil Task), and with
// [ErrTaskNotRegistered] in the transaction of an event that a [Handler]
// or an [Inbox] built on another Handlers runs, one that registered no
// task of its name when the Handler or Inbox took its snapshot: the
// workers of that Handlers would fail it at every attempt until it was
// dead-lettered. Return the error, and the event rolls back. (A
// [Store.Run] of your own has no Handlers to ask.)
//
// The args stay in the task's row, where [Inbox.Payload] reads them,
// until Prune clears them [Retention].Payloads (7 days by default) after
// the task finished (processed or skipped; the row stays, and the key
// taken), or with the row of a dead-lettered task, which a redrive runs
// with them: pass ids rather than personal data where you can, and read
// the rest when the task runs. Arguments that do not encode as JSON fail
// Enqueue with an error that names the task, their Go type and the kind
// of failure, never a value (encoding/json's text may quote one).
func (t *Task[T]) Enqueue(ctx context.Context, tx Tx, key string, args T) (enqueued bool, err error) {
	if t == nil || t.hs == nil {
		// A zero Task: stored, it would be a task named "" that no worker
		// runs, failed until it is dead-lettered.
		return false, errorf("Task.Enqueue: a Task not made by NewTask, which names and registers it")
	}
	if err := checkText("task key", key, true); err != nil {
		return false, err // wraps ErrInvalidKey
	}
	if len(key) > maxTaskKeyLen {
		return false, errorf("%w: task key of %d bytes (at most %d)", ErrInvalidKey, len(key), maxTaskKeyLen)
	}
	tt, ok := tx.(taskTx)
	if !ok {
		return false, errorf("%w (got %T)", ErrNeedsStoreTx, tx)
	}
	if et := tt.eventTasks(); et != nil && !et.registers(t.hs, t.name) {
		// Stored, it would fail at every attempt of the workers that run
		// this event's Handlers until it was dead-lettered.
		return false, errorf("task %s: %w as %q in the Handlers this event runs with: register it there with NewTask, before NewInbox", t.name, ErrTaskNotRegistered, t.name)
	}
	payload, err := json.Marshal(args)
	if err != nil {
		// Not json.Marshal's text, nor the error: a MarshalJSON's failure
		// is the method's own text, which may quote what it encodes, and
		// an unsupported value's quotes the value.
		return false, errorf("task %s: its arguments, a %T, do not encode as JSON: %s", t.name, args, encodingFailure(err))
	}
	now := tt.taskNow()
	r := &inboxRow{InboxRecord: InboxRecord{
		EventID: taskID(t.name, key), EventType: t.name, Kind: KindTask, Created: now,
		State: InboxPending, ReceivedAt: now, NextAttemptAt: now,
	}, Payload: payload, Trace: observeLink(ctx)}
	enqueued, err = tt.enqueueTask(ctx, r)
	if err != nil {
		return false, errorf("task %s: %w", t.name, err)
	}
	if enqueued {
		tt.whenTasksDue(func() { t.hs.wakeWorkers(tt) })
	}
	return enqueued, nil
}

// encodingFailure is the kind of json.Marshal's failure err, without a
// value.
func encodingFailure(err error) string {
	var marshaler *json.MarshalerError
	var value *json.UnsupportedValueError
	var typ *json.UnsupportedTypeError
	switch {
	case errors.As(err, &marshaler):
		return "a MarshalJSON or MarshalText method failed"
	case errors.As(err, &value):
		return "a value JSON cannot hold (NaN, an infinity, a cycle)"
	case errors.As(err, &typ):
		return "it holds a " + typ.Type.String() + ", a type JSON cannot hold"
	}
	return "encoding/json failed"
}

// taskTx is a store transaction that can enqueue tasks: the Tx of
// MemoryStore and of PgxStore.
type taskTx interface {
	// enqueueTask inserts r in the transaction unless its id is in the
	// inbox, and reports whether it did.
	enqueueTask(ctx context.Context, r *inboxRow) (bool, error)
	// taskNow is the clock of the transaction's runner: the inbox's for
	// an inbox attempt, the Handler's otherwise.
	taskNow() time.Time
	// eventTasks are the tasks of the Handlers of the Handler or Inbox
	// running the transaction's event, as it took them; nil for a
	// Store.Run of the caller's own.
	eventTasks() *eventTasks
	// notifyWorkers wakes the workers of other processes after a commit
	// that stored a task, when this process has no Inbox to do it.
	notifyWorkers()
	// taskStore is the store the transaction stores its tasks in: the
	// inboxes whose taskStore it is take them.
	taskStore() inboxBackend
	// whenTasksDue registers fn to run once the transaction committed and
	// the workers may take its tasks: after the commit on PostgreSQL (an
	// AfterCommit func); on MemoryStore once its AfterCommit funcs, which
	// apply a fake's writes, have run. It never runs after a rollback.
	whenTasksDue(fn func())
}

// eventTasks implements taskTx for both stores' transactions.
func (t *txState) eventTasks() *eventTasks { return t.claim.tasks }

// eventTasks are what a Handler or an Inbox took of the tasks of the
// Handlers it was built on (NewHandler and NewInbox take a snapshot): a
// registration on that Handlers afterwards neither changes them nor
// races with an Enqueue that reads them.
// An Inbox's workers run the tasks of its snapshot.
type eventTasks struct {
	hs     *Handlers
	byName map[string]taskRegistration
}

func newEventTasks(hs *Handlers) *eventTasks {
	return &eventTasks{hs: hs, byName: maps.Clone(hs.tasks)}
}

// registers reports whether the Handlers registers the task name that
// NewTask registered in from: it is from, or registered another task of
// that name before the snapshot, which its workers run in its stead.
func (et *eventTasks) registers(from *Handlers, name string) bool {
	_, ok := et.byName[name]
	return et.hs == from || ok
}

// arrivedAt implements objectTx for both stores' transactions.
func (t *txState) arrivedAt() time.Time { return t.claim.arrived }

// taskNow implements taskTx for both stores' transactions.
func (t *txState) taskNow() time.Time {
	if t.claim.fence != nil {
		return t.claim.fence.Now
	}
	return t.claim.receivedAt()
}

const taskIDPrefix = "task:"

func taskID(name, key string) string { return taskIDPrefix + name + ":" + key }

// parseTaskID splits a task id; a name never holds ':'.
func parseTaskID(id string) (name, key string, ok bool) {
	rest, ok := strings.CutPrefix(id, taskIDPrefix)
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, ":")
}

// taskIdempotencyKey is the idempotency key of every attempt of the task
// name for key.
func taskIdempotencyKey(name, key string) string {
	return display.TaskIdempotencyKey(taskID(name, key), name)
}

// wakers are the inboxes built on a Handlers, which a committed task
// wakes. They are held weakly: a Handlers shared by many inboxes (one
// registry for a whole test binary, each test with an inbox of its own)
// must not keep the inboxes, and their stores, that are gone.
type wakers struct {
	mu      sync.Mutex
	inboxes []weak.Pointer[Inbox]
}

// live returns the inboxes still in use, and forgets the others.
func (w *wakers) live() []*Inbox {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*Inbox, 0, len(w.inboxes))
	kept := w.inboxes[:0]
	for _, p := range w.inboxes {
		if in := p.Value(); in != nil {
			out = append(out, in)
			kept = append(kept, p)
		}
	}
	clear(w.inboxes[len(kept):])
	w.inboxes = kept
	return out
}

// wakeWorkers wakes the workers of the inboxes built on hs on tt's
// store: a task was committed in tt. An inbox whose Run is running here
// takes it; otherwise the workers of other processes are notified,
// through the inbox, or through tt's store when no inbox is built on hs
// and that store in this process (a synchronous receiver whose tasks a
// worker deployment runs, or whose Handlers has an Inbox on another store
// only, which could neither take the task nor notify this store's
// workers). The store is told by identity: an Inbox on another PgxStore
// of the same database counts as another store's, its workers woken by
// the notification (with PollOnly, by their poll).
func (hs *Handlers) wakeWorkers(tt taskTx) {
	store, woken := tt.taskStore(), false
	for _, in := range hs.wakers.live() {
		if in.store.taskStore() != store {
			continue
		}
		woken = true
		if in.running.Load() {
			in.signal()
			continue
		}
		in.notifyOthers()
	}
	if !woken {
		tt.notifyWorkers()
	}
}

func (hs *Handlers) hasInbox() bool { return len(hs.wakers.live()) > 0 }

func (hs *Handlers) addInbox(in *Inbox) {
	hs.wakers.mu.Lock()
	defer hs.wakers.mu.Unlock()
	hs.wakers.inboxes = append(hs.wakers.inboxes, weak.Make(in))
}

// attemptTask runs one leased task and records how it ended, as attempt
// does for an event, and returns the state it left the task in: pending
// when it snoozed.
func (in *Inbox) attemptTask(ctx context.Context, row *inboxRow, done func(Result)) (end InboxState) {
	start := time.Now()
	res := Result{EventID: row.EventID, EventType: row.EventType, Attempt: row.Attempt, Kind: KindTask}
	defer func() {
		res.Duration = time.Since(start)
		in.reportEnd(ctx, row, done, &res)
		end = res.State // a snooze: pending, recorded so or found so by reportEnd
	}()
	reg, ok := in.d.tasks.byName[row.EventType]
	if !ok {
		// Not registered in this process (yet, or any more): retried with
		// backoff, so that a deployment that registers it still runs it.
		res.Outcome, res.Err = OutcomeFailed, errorf("%w as %q", ErrTaskNotRegistered, row.EventType)
		res.State = in.settleFailure(ctx, row, res.Err)
		return
	}
	err := in.runTask(ctx, reg, row)
	var snooze *SnoozeError
	var permanent *PermanentError
	reason, skipped := skipReason(err)
	switch {
	case err == nil:
		res.Outcome, res.State = OutcomeProcessed, InboxProcessed
		if err := in.settle(ctx, row, InboxProcessed, nil); err != nil {
			// The effect happened, but the task will run again (with the
			// same idempotency key) once its lease expires, or, at its last
			// attempt, that lease dead-letters it: not a processed task yet.
			next := "it runs again when its lease expires"
			if in.lastAttempt(row) {
				next = "at its last attempt, it is dead-lettered when its lease expires"
			}
			res.Outcome, res.State = OutcomeFailed, ""
			res.Err = errorf("task %s ran, but its end was not recorded; %s: %w", row.EventType, next, err)
		}
	case skipped:
		why := errors.New(reason)
		res.Outcome, res.SkipReason = OutcomeSkipped, errorText(why) // as its LastError keeps it
		res.State = settled(InboxSkipped, in.settle(ctx, row, InboxSkipped, why))
	case errors.As(err, &snooze) && !panicked(err):
		res.Outcome = OutcomeQueued
		res.State = settled(InboxPending, in.settleAt(ctx, row, InboxPending, previousError(row), in.cfg.Now().Add(snooze.After), true, row.AttemptedAt))
	case errors.As(err, &permanent) && !panicked(err):
		res.Outcome, res.Err = OutcomeFailed, err
		res.State = settled(InboxDeadLetter, in.settle(ctx, row, InboxDeadLetter, err))
	default:
		res.Outcome, res.Err = OutcomeFailed, err
		res.State = in.settleFailure(ctx, row, err)
	}
	return
}

// runTask calls the task's func within InboxConfig.Timeout, turning a
// panic into an error that names the task. A *PanicError the func
// returns is its own, and is left as it is.
func (in *Inbox) runTask(ctx context.Context, reg taskRegistration, row *inboxRow) (err error) {
	ctx, cancel := context.WithTimeout(ctx, in.cfg.Timeout)
	defer cancel()
	returned := false
	defer func() {
		if p, ok := err.(*PanicError); ok && !returned {
			p.task = row.EventType
		}
	}()
	defer recoverPanic(&err)
	err = reg.run(ctx, row)
	returned = true
	return timeoutErr(ctx, in.cfg.Timeout, "task "+row.EventType, "InboxConfig.Timeout", err)
}
