package idempotency

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemoryStore is an in-memory [Store] with the semantics of [PgxStore], for
// unit-testing handlers without a database: claims and guards are held by
// their transaction until it ends, a second claim of a held key waits for
// that transaction (duplicate if it committed, claimed if it rolled back),
// everything rolls back on error, panic or timeout, and AfterCommit funcs run
// only after a commit. A wait that would close a cycle fails with
// [ErrDeadlock], as PostgreSQL's deadlock detector would.
//
// The store keeps no business data: a test fake that stands in for the
// service's tables applies its writes from [Tx.AfterCommit], so that they
// commit and roll back with the claim. A handler that writes through
// [PgxTx] cannot run on it ([PgxTx] panics, saying so): test that one on
// PostgreSQL (idempotencytest.Postgres), or give it its writes through an
// interface whose fake applies them in [Tx.AfterCommit]. The store
// releases an [OnCurrent] object's lock at the commit, as PostgreSQL
// does, before the AfterCommit funcs run: the funcs of two events of one
// object that the synchronous [Handler] applies may run in either order,
// so a fake that replaces such a row numbers each write as the handler
// makes it, under the lock, and applies a row only over an older number.
// An [Inbox]'s workers wait for those funcs: the next event of an object
// is held from them until the AfterCommit funcs of the earlier event's
// transaction have run, and so is a [Task] a transaction enqueued, so
// that the next event's handler, or a task func, that reads what the
// event wrote finds the fake's writes, as it finds them committed on
// PostgreSQL.
//
// It backs an [Inbox] too, with the leases, per-object order and fencing
// of PgxStore's; drive it with [Inbox.WorkDue] and a fake InboxConfig.Now.
//
// It keeps times as PostgreSQL does, to the microsecond (truncated): a
// record made on a finer clock shows, filters and comes due at the time
// PgxStore would show.
//
// The zero value is an empty store, ready to use. A MemoryStore is safe for
// concurrent use and starts no goroutines; it must not be copied after
// first use.
type MemoryStore struct {
	mu      sync.Mutex
	events  map[string]EventRecord
	guards  map[guardID]GuardRecord
	locks   map[lockID]*keyLock
	waiting int // transactions blocked on a held key, for tests

	inbox map[string]*memoryInboxRow // by event id; see store_memory_inbox.go
	// unfinished holds the rows of inbox still to be applied (pending,
	// failed, processing), by event id: the only rows a lease looks at,
	// however many finished ones the store keeps. unfinishedPeak is the
	// most it held since it was last made anew: a map keeps the room it
	// grew to, and a range over it walks that room. inboxByState holds
	// every row of inbox by its kind and state, ordered by ReceivedAt and
	// EventID as List orders them: what Stats counts and List walks.
	// indexInboxRow keeps them in step with every change of a row's state.
	unfinished     map[string]*memoryInboxRow
	unfinishedPeak int
	inboxByState   map[inboxSlot]*inboxOrder
	// ending holds the rows of events about an object that their fenced
	// transaction committed final and holds until its AfterCommit funcs
	// have run: a lease keeps the next event of their object back until
	// then, as a fake applies the writes it must find there.
	ending map[*memoryInboxRow]struct{}
	// taskArgs holds the finished tasks whose arguments Prune is still to
	// clear, by FinishedAt and EventID: a prune reads those it clears and
	// one more, not the tasks it cleared before. indexInboxRow keeps it in
	// step too.
	taskArgs inboxOrder
	// inboxFinished holds the finished rows of inboxByState again (final
	// states, FinishedAt set), by kind and state, ordered by FinishedAt
	// and EventID: Prune's deletion reads the rows it deletes and one more
	// of each state, not the rows it keeps. indexInboxRow keeps it in step
	// too.
	inboxFinished map[inboxSlot]*inboxOrder
	// inboxAttempted holds the rows of inbox that were attempted, by
	// AttemptedAt and EventID: its last is Stats' LastAttempt, without a
	// walk of the finished rows. indexInboxRow keeps it in step too.
	inboxAttempted inboxOrder

	// seq is PgxStore's idempotency_seq: the last number handed out.
	seq     int64
	objects map[guardID]objectRecord // (scope, object id) → last fetch; see store_memory_objects.go
	order   map[guardID]orderRecord  // (scope, key) → newest event applied

	recovery map[string]recoveryCheckpoint // by name; see recover_store.go
}

type guardID struct{ scope, key string }

// lockID names a claimable key: an event id, a guard (guard set), a task
// id (task set), or a record that transactions update in turn (record
// set: a kind and a guardID): the lock of an object, an order key.
type lockID struct {
	guard, task bool
	record      string
	guardID
}

type keyLock struct {
	owner    *memoryTx
	released chan struct{} // closed when owner ends
}

// NewMemoryStore returns an empty in-memory store. The zero value is an
// empty store too.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{}
}

// init makes the maps of a zero MemoryStore; s.mu is held. Reads of nil
// maps need none, and every write follows an acquire.
func (s *MemoryStore) init() {
	if s.locks == nil {
		s.events = make(map[string]EventRecord)
		s.guards = make(map[guardID]GuardRecord)
		s.locks = make(map[lockID]*keyLock)
		s.inbox = make(map[string]*memoryInboxRow)
		s.unfinished = make(map[string]*memoryInboxRow)
		s.inboxByState = make(map[inboxSlot]*inboxOrder)
		s.ending = make(map[*memoryInboxRow]struct{})
		s.taskArgs.by = (*memoryInboxRow).argsPosition
		s.inboxAttempted.by = (*memoryInboxRow).attemptedPosition
		s.inboxFinished = make(map[inboxSlot]*inboxOrder)
		s.objects = make(map[guardID]objectRecord)
		s.order = make(map[guardID]orderRecord)
	}
}

// Run implements [Store]. A transaction failed by [ErrDeadlock] is rolled
// back and run again, up to 5 attempts in all, as [PgxStore] does with
// PostgreSQL's deadlocks and serialization failures; a ctx that ends
// before it runs again fails Run with ctx's error, as PgxStore's does.
func (s *MemoryStore) Run(ctx context.Context, c Claim, apply ApplyFunc) (Outcome, error) {
	// Claim.Guards is a hint this store has no use for: a Guard costs no
	// round trip here.
	if err := c.check(); err != nil {
		return OutcomeFailed, err
	}
	for attempt := 1; ; attempt++ {
		outcome, err := s.runOnce(ctx, c, apply)
		var dl *deadlockError
		if !errors.As(err, &dl) || attempt == maxAttempts {
			return outcome, err
		}
		// Let the transaction that won finish first, as PostgreSQL's lock
		// queue would, rather than race it for the key again.
		select {
		case <-dl.winner.ended:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			return OutcomeFailed, rerunCut(ctx, err)
		}
	}
}

// deadlockError is ErrDeadlock with the transaction the victim waited for.
type deadlockError struct{ winner *memoryTx }

func (e *deadlockError) Error() string        { return ErrDeadlock.Error() }
func (e *deadlockError) Is(target error) bool { return target == ErrDeadlock }

func (s *MemoryStore) runOnce(ctx context.Context, c Claim, apply ApplyFunc) (Outcome, error) {
	tx := &memoryTx{txState: txState{claim: c}, s: s, ended: make(chan struct{})}
	defer func() {
		if !tx.isDone() { // apply panicked
			tx.finish(ctx, nil, false)
		}
	}()
	first, err := tx.acquire(ctx, lockID{guardID: guardID{key: c.EventID}}, nil)
	if err != nil || !first {
		tx.finish(ctx, nil, false)
		if err != nil {
			return OutcomeFailed, err
		}
		return OutcomeDuplicate, nil
	}
	if c.fence != nil && !tx.holdInboxRow() {
		tx.finish(ctx, nil, false)
		return OutcomeFailed, ErrLeaseLost
	}
	tx.claimedAt = kept(time.Now())
	if tx.claim.ReceivedAt.IsZero() {
		// Received when claimed, as PgxStore sends it with the claim; not
		// when record is called, after the handler ran.
		tx.claim.ReceivedAt = tx.claimedAt
	}
	if err := ctx.Err(); err != nil {
		// PostgreSQL cannot begin a transaction on a done context: the
		// handler never runs.
		tx.finish(ctx, nil, false)
		return OutcomeFailed, err
	}
	if apply == nil {
		outcome := c.nilApplyOutcome()
		tx.finish(ctx, tx.record(outcome, ""), false)
		return outcome, nil
	}
	err = tx.runHandler(ctx, apply, tx)
	if err == nil {
		err = tx.abortErr() // PostgreSQL fails the commit of an aborted transaction
	}
	if err == nil || skipped(err) {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr // a commit on an expired context fails
		}
	}
	if reason, ok := skipReason(err); ok {
		tx.finish(ctx, tx.record(OutcomeSkipped, reason), false)
		return OutcomeSkipped, nil
	}
	if err != nil {
		tx.finish(ctx, nil, false)
		return OutcomeFailed, err
	}
	tx.finish(ctx, tx.record(OutcomeProcessed, ""), true)
	return OutcomeProcessed, nil
}

// record is the ledger row of tx's event. ProcessedAt is the time of the
// claim, as in PgxStore.
func (tx *memoryTx) record(o Outcome, reason string) *EventRecord {
	c := tx.claim
	return &EventRecord{
		EventID: c.EventID, EventType: c.EventType, ObjectID: c.ObjectID,
		Account: c.Account, Livemode: c.Livemode, Outcome: o, SkipReason: reason,
		ReceivedAt: kept(c.receivedAt()), ProcessedAt: tx.claimedAt,
	}
}

// kept is t as the store keeps it: to the microsecond, truncated, as
// PostgreSQL keeps a timestamptz that pgx sends. Every time MemoryStore
// stores or compares with what it stored goes through it, so that records,
// filters, what is due and what a prune deletes are PgxStore's on a clock
// finer than that (a test's fake clock, time.Now).
func kept(t time.Time) time.Time { return t.Truncate(time.Microsecond) }

// Ping implements [Store]; an in-memory store always answers.
func (s *MemoryStore) Ping(context.Context) error { return nil }

// LookupEvent returns the ledger record of a committed event claim. An id
// no claim can have is refused with [ErrInvalidKey], as
// [PgxStore.LookupEvent] refuses it.
func (s *MemoryStore) LookupEvent(_ context.Context, eventID string) (EventRecord, bool, error) {
	if err := checkEventID("LookupEvent", eventID); err != nil {
		return EventRecord{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.events[eventID]
	return r, ok, nil
}

// LookupGuard returns the committed claim of a natural key. A scope or a
// key no claim can have is refused with [ErrInvalidKey], as
// [PgxStore.LookupGuard] refuses it.
func (s *MemoryStore) LookupGuard(_ context.Context, scope, key string) (GuardRecord, bool, error) {
	if err := checkLookedUpGuard("LookupGuard", scope, key); err != nil {
		return GuardRecord{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.guards[guardID{scope, key}]
	return r, ok, nil
}

// ListEvents returns the committed event claims that f selects, newest
// first (by ProcessedAt, then event id), as [PgxStore.ListEvents] does.
func (s *MemoryStore) ListEvents(_ context.Context, f EventFilter) ([]EventRecord, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	var out []EventRecord
	for _, r := range s.events {
		if f.matches(&r) {
			out = append(out, r)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b EventRecord) int {
		if c := b.ProcessedAt.Compare(a.ProcessedAt); c != 0 {
			return c
		}
		return strings.Compare(b.EventID, a.EventID)
	})
	if len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// memoryTx is a MemoryStore transaction: the keys it holds and, when it
// waits, the transaction it waits for. Both are guarded by s.mu.
type memoryTx struct {
	txState
	s         *MemoryStore
	claimedAt time.Time
	held      []lockID
	waitFor   *memoryTx
	done      bool
	aborted   error                // the error that aborted the transaction, as PostgreSQL aborts it
	ended     chan struct{}        // closed when its keys are released
	inboxRow  *memoryInboxRow      // the inbox row a fenced claim holds, until the transaction ends
	tasks     map[string]*inboxRow // the tasks enqueued, stored in the inbox on commit
	records   map[lockID]any       // the new values of the records it holds, stored on commit
	// committedTasks are the rows of the tasks it committed, held from
	// the workers until its AfterCommit funcs have run, and taskWakes the
	// funcs that wake the workers once they are released.
	committedTasks []*memoryInboxRow
	taskWakes      []func()
}

func (tx *memoryTx) Guard(ctx context.Context, scope, key string) (bool, error) {
	if err := checkGuardKey(scope, key); err != nil {
		return false, err
	}
	return tx.take(ctx, lockID{guard: true, guardID: guardID{scope, key}}, nil)
}

// take is a statement of tx that takes k: it fails in an aborted
// transaction or a done ctx, and a wait that fails (a deadlock, a
// cancelled ctx) aborts tx, as PostgreSQL aborts a transaction whose
// statement failed. It reports acquire's answer; held, when not nil, is
// acquire's.
func (tx *memoryTx) take(ctx context.Context, k lockID, held func()) (bool, error) {
	if tx.isDone() { // first, as PgxStore's enter: whatever else went wrong, it ended
		return false, ErrTxDone
	}
	if err := tx.enter(); err != nil {
		return false, err
	}
	defer tx.leave()
	if err := tx.abortErr(); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	first, err := tx.acquire(ctx, k, held)
	if err != nil && !errors.Is(err, ErrTxDone) {
		tx.abort(err)
	}
	return first, err
}

// enqueueTask puts the task's row in tx as it takes the task's key, under
// the store's lock: finish, which may run at any moment (a handler that
// returned while a goroutine of its own enqueues), finds every task key
// tx holds with its row.
func (tx *memoryTx) enqueueTask(ctx context.Context, r *inboxRow) (bool, error) {
	row := *r
	row.Payload = slices.Clone(r.Payload)
	row.Created, row.ReceivedAt, row.NextAttemptAt = kept(r.Created), kept(r.ReceivedAt), kept(r.NextAttemptAt)
	return tx.take(ctx, lockID{task: true, guardID: guardID{key: r.EventID}}, func() {
		if tx.tasks == nil {
			tx.tasks = make(map[string]*inboxRow)
		}
		tx.tasks[r.EventID] = &row
	})
}

// notifyWorkers implements taskTx: a MemoryStore has no other process to
// wake.
func (tx *memoryTx) notifyWorkers() {}

// taskStore implements taskTx.
func (tx *memoryTx) taskStore() inboxBackend { return tx.s }

// taskStore implements inboxBackend.
func (s *MemoryStore) taskStore() inboxBackend { return s }

// whenTasksDue implements taskTx: fn runs once tx's tasks are released to
// the workers, after its AfterCommit funcs, and never when tx rolls back.
func (tx *memoryTx) whenTasksDue(fn func()) {
	tx.s.mu.Lock()
	defer tx.s.mu.Unlock()
	tx.taskWakes = append(tx.taskWakes, fn)
}

func (tx *memoryTx) abort(err error) {
	tx.s.mu.Lock()
	defer tx.s.mu.Unlock()
	if tx.aborted == nil {
		tx.aborted = err
	}
}

func (tx *memoryTx) abortErr() error {
	tx.s.mu.Lock()
	defer tx.s.mu.Unlock()
	if tx.aborted != nil {
		// %v, not %w: the cause no longer reads as a deadlock to retry,
		// as PostgreSQL answers the commit of an aborted transaction.
		return errorf("%w: %v", errTxAborted, tx.aborted)
	}
	return nil
}

func (tx *memoryTx) isDone() bool {
	tx.s.mu.Lock()
	defer tx.s.mu.Unlock()
	return tx.done
}

// acquire takes key k for tx. It reports false when k is committed or
// already held by tx, and waits while another transaction holds it. held,
// when not nil, is called under s.mu as tx comes to hold k, so that what
// goes with the key is there whenever the key is.
func (tx *memoryTx) acquire(ctx context.Context, k lockID, held func()) (bool, error) {
	s := tx.s
	for {
		s.mu.Lock()
		if tx.done {
			s.mu.Unlock()
			return false, ErrTxDone
		}
		if s.committed(k) {
			s.mu.Unlock()
			return false, nil
		}
		l := s.locks[k]
		if l == nil {
			s.init()
			s.locks[k] = &keyLock{owner: tx, released: make(chan struct{})}
			tx.held = append(tx.held, k)
			if held != nil {
				held()
			}
			s.mu.Unlock()
			return true, nil
		}
		if l.owner == tx {
			s.mu.Unlock()
			return false, nil
		}
		for o := l.owner; o != nil; o = o.waitFor {
			if o == tx {
				s.mu.Unlock()
				return false, &deadlockError{winner: l.owner}
			}
		}
		tx.waitFor = l.owner
		s.waiting++
		s.mu.Unlock()

		var err error
		select {
		case <-l.released:
		case <-ctx.Done():
			err = ctx.Err()
		}
		s.mu.Lock()
		tx.waitFor = nil
		s.waiting--
		s.mu.Unlock()
		if err != nil {
			return false, err
		}
	}
}

func (s *MemoryStore) committed(k lockID) bool {
	if k.record != "" {
		return false // a record is locked in turn, never claimed once
	}
	if k.task {
		_, ok := s.inbox[k.key]
		return ok
	}
	if k.guard {
		_, ok := s.guards[k.guardID]
		return ok
	}
	_, ok := s.events[k.key]
	return ok
}

// unlock releases k, waking those that wait for it; s.mu is held.
func (s *MemoryStore) unlock(k lockID) {
	close(s.locks[k].released)
	delete(s.locks, k)
}

// finish ends tx. It stores rec (the event's ledger record; nil on
// rollback) with the final state of the inbox row a fenced claim holds
// and, when commit is set, the guards tx claimed, and runs its AfterCommit
// funcs; only then does it release every key tx held, and the inbox row,
// even when a panic of claim.OnAfterCommitPanic ends the funcs. A
// delivery waiting for tx's claim thus wakes to a commit whose effects, the
// writes a test fake applies after commit included, are all visible.
func (tx *memoryTx) finish(ctx context.Context, rec *EventRecord, commit bool) {
	s := tx.s
	now := kept(time.Now())
	s.mu.Lock()
	tx.done = true
	for _, k := range tx.held {
		switch {
		case !k.guard && !k.task && k.record == "" && rec != nil:
			s.events[k.key] = *rec
		case k.guard && commit:
			s.guards[k.guardID] = GuardRecord{Scope: k.scope, Key: k.key, EventID: tx.claim.EventID, ClaimedAt: now}
		case k.task && commit:
			// Held until the AfterCommit funcs have run: they apply a
			// fake's writes, which a worker running the task must find,
			// as it finds the writes committed with it on PostgreSQL.
			r := &memoryInboxRow{inboxRow: *tx.tasks[k.key], heldBy: tx}
			s.inbox[k.key] = r
			s.indexInboxRow(r)
			tx.committedTasks = append(tx.committedTasks, r)
		case k.record != "" && commit:
			tx.commitRecord(k)
		}
	}
	if rec != nil {
		tx.finishInboxRow(rec)
	}
	// The keys of records (OnCurrent's objects, CheckOrder's keys) are
	// released now, as PostgreSQL releases its row locks at the commit: an
	// AfterCommit func that runs another event's transaction on the same
	// object would otherwise wait for its own. The keys of the claim, the
	// guards and the tasks are held until the AfterCommit funcs have run,
	// so that a copy of the event that waits wakes to all their effects;
	// a func that runs into one finds it committed, not held.
	kept := tx.held[:0]
	for _, k := range tx.held {
		if k.record != "" {
			s.unlock(k)
		} else {
			kept = append(kept, k)
		}
	}
	tx.held = kept
	s.mu.Unlock()

	// Released whatever the AfterCommit funcs do: a claim's
	// OnAfterCommitPanic that panics in turn goes up to Run's caller, as
	// on a PgxStore, whose commit has released its locks by then.
	defer func() {
		for _, wake := range tx.release() {
			wake()
		}
	}()
	tx.end(ctx, commit)
}

// release lets go of every key and inbox row tx holds, its committed
// tasks' rows included, once its AfterCommit funcs have run, and returns
// the funcs that wake the workers to those tasks (none after a rollback).
func (tx *memoryTx) release() (wakes []func()) {
	s := tx.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range tx.held {
		s.unlock(k)
	}
	tx.held = nil
	tx.releaseInboxRow()
	for _, r := range tx.committedTasks {
		r.heldBy = nil
	}
	if len(tx.committedTasks) > 0 {
		wakes = tx.taskWakes
	}
	tx.committedTasks, tx.taskWakes = nil, nil
	close(tx.ended)
	return wakes
}
