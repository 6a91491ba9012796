package idempotency

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/seed-a84bb619/idempotency/internal/keytext"
)

// Store is the contract both backends satisfy: [MemoryStore] and [PgxStore].
//
// Run is the only way to apply an event, and it fixes the order: begin a
// transaction, claim the event id in it, apply, commit. The two wrong orders
// (claim in a transaction of its own, or write first and claim after) cannot
// be expressed.
type Store interface {
	// Run claims c.EventID in a new transaction and, if the claim is new,
	// calls apply with that transaction, then commits. It reports:
	//
	//   - OutcomeDuplicate, nil: the id was claimed by a committed
	//     transaction. A claim held by a transaction still in flight makes Run
	//     wait for it to end: duplicate if it committed, the claim is taken
	//     if it rolled back.
	//   - OutcomeProcessed, nil: apply returned nil and the transaction
	//     committed; the AfterCommit funcs have run. A panic in one of them
	//     does not stop the others and is passed to c.OnAfterCommitPanic:
	//     the commit stands, so it is no error.
	//   - OutcomeSkipped, nil: apply returned a [SkipError] (possibly
	//     wrapped); its writes were rolled back and the claim stored with the
	//     reason, so the id is answered duplicate from then on.
	//   - OutcomeFailed, err: apply returned err; everything was rolled back.
	//   - OutcomeUnavailable, err: the store could not be reached; err wraps
	//     [ErrStoreUnavailable]. Nothing was written, but in the one case
	//     below.
	//
	// A non-nil error means that nothing was applied, but in one case: a
	// COMMIT whose answer was lost (on PostgreSQL, its connection dropped,
	// or ctx ended as it waited) and that the store could not confirm
	// either way ([PgxStore] looks the transaction up on another
	// connection: that look-up failed too, or found it still in progress 5
	// seconds on) is returned as OutcomeUnavailable, its error wrapping
	// [ErrStoreUnavailable], whatever cut the wait, and may have
	// committed, its AfterCommit funcs not run: the event's next delivery
	// then finds it a duplicate. One the look-up finds committed is
	// OutcomeProcessed; one it finds rolled back is returned as what cut
	// it (OutcomeUnavailable for a lost connection, OutcomeFailed for
	// ctx). A claim with text no store can
	// keep (see [ErrInvalidKey]) fails before anything starts. A panic in
	// apply rolls the transaction back, the claim with it, and goes on up
	// to Run's caller: the [Handler] and the [Inbox] turn a handler's
	// panic into a [PanicError] before it reaches Run.
	//
	// A nil apply only records the claim (used for ignored events when
	// Config.RecordIgnored is set).
	Run(ctx context.Context, c Claim, apply ApplyFunc) (Outcome, error)

	// Ping reports whether the store answers, for health checks.
	Ping(ctx context.Context) error
}

// ApplyFunc applies one event's business writes inside tx.
type ApplyFunc func(ctx context.Context, tx Tx) error

// Claim describes the event a [Store] claims. Only EventID is required; the
// rest is stored in the ledger for operators.
type Claim struct {
	EventID    string
	EventType  string
	ObjectID   string // data.object.id, e.g. in_...
	Account    string // the connected account, for Stripe Connect
	Livemode   bool
	ReceivedAt time.Time // when the delivery arrived; zero means now; else in the years 1 to 9999 (ErrInvalidKey)
	// Outcome is what Run records, and reports, when apply is nil:
	// OutcomeIgnored, or OutcomeProcessed for any other value, the zero
	// one included. It is ignored when apply is not nil.
	Outcome Outcome
	// Guards are natural keys apply is expected to claim with [Tx.Guard].
	// A store may claim them together with the event, before apply runs, and
	// answer Guard from that claim: [PgxStore] does, in the claim's round
	// trip. It is only a hint: the results are those of Guard calls made by
	// apply, and a key apply never guards is released before the
	// transaction commits. [Handler] fills it from the actions declared with
	// ActionSpec.KeyIsObjectID.
	Guards []GuardKey
	// OnAfterCommitPanic receives each AfterCommit func that panicked, after
	// the commit: the panic cannot undo it, so Run still reports
	// OutcomeProcessed with a nil error. [Handler] logs them and passes them
	// to Config.OnResult. Nil logs them with slog.Default. A panic of its
	// own goes up to Run's caller, the AfterCommit funcs after it not run;
	// the commit stands, and the keys the transaction held are released.
	OnAfterCommitPanic func(*PanicError)

	// fence, set by an Inbox worker, makes Run finish the event's inbox
	// row in the same transaction; see inboxFence.
	fence *inboxFence
	// seq keeps a synchronous delivery's number on the store's counter
	// (current.go) across the transaction's reruns: taken once, after the
	// delivery arrived. Nil: taken anew in each transaction.
	seq *int64
	// arrived is when a delivery reached this process's dispatcher, on
	// its monotonic clock (current.go); zero for an inbox attempt.
	arrived time.Time
	// tasks are those of the Handlers of the Handler or Inbox that runs
	// the event, as it took them, among which Task.Enqueue's must be;
	// nil for a Run of the caller's own.
	tasks *eventTasks
}

// eventSeq is the event's number on the store's counter: the inbox's from
// ingest, the one this delivery took already, or next() once.
func (c *Claim) eventSeq(next func() (int64, error)) (int64, error) {
	if c.fence != nil && c.fence.Seq != 0 {
		return c.fence.Seq, nil
	}
	if c.seq != nil && *c.seq != 0 {
		return *c.seq, nil
	}
	n, err := next()
	if err == nil && c.seq != nil {
		*c.seq = n
	}
	return n, err
}

// GuardKey is a natural key as [Tx.Guard] takes it.
type GuardKey struct{ Scope, Key string }

// check rejects a claim no store can keep, alike on every store.
func (c *Claim) check() error {
	if err := checkKey("Claim.EventID", c.EventID); err != nil {
		return err
	}
	for _, f := range [...]struct {
		name, value string
		indexed     bool // a key of PostgreSQL's indexes: bounded too
	}{
		{"Claim.EventType", c.EventType, true}, {"Claim.ObjectID", c.ObjectID, true}, {"Claim.Account", c.Account, false},
	} {
		var err error
		if f.indexed && f.value != "" {
			err = checkKey(f.name, f.value)
		} else {
			err = checkText(f.name, f.value, false)
		}
		if err != nil {
			return err
		}
	}
	for i, g := range c.Guards {
		if err := checkGuardKey(g.Scope, g.Key); err != nil {
			return errorf("%w (Claim.Guards[%d])", err, i)
		}
	}
	return checkStoredTime("Claim.ReceivedAt", c.ReceivedAt)
}

// checkStoredTime rejects a time a store is to keep that is outside the
// years 1 to 9999, the range of an event's created and of the filters'
// bounds: PostgreSQL refuses one before 4713 BC or after the year 294276,
// and pgx stores a time past that as one of another century (see
// minFilterTime), where MemoryStore would keep it. The zero time passes.
func checkStoredTime(field string, t time.Time) error {
	if !storableTime(t) {
		return errorf("%w: %s is not a time between the years 1 and 9999", ErrInvalidKey, field)
	}
	return nil
}

// checkText rejects text a store cannot keep; it names the field, never
// quotes the value.
func checkText(field, value string, required bool) error {
	if p := keytext.TextProblem(value, required); p != "" {
		return errorf("%w: %s %s", ErrInvalidKey, field, p)
	}
	return nil
}

// paddedName reports a name with white space at its ends or a control
// character: one read from a file with its line end ("billing\n"), which
// would name another thing than the one meant (PgxConfig.Schema, an
// ActionSpec.Name, which are keys of what the store keeps).
func paddedName(name string) bool {
	return strings.TrimSpace(name) != name || strings.ContainsFunc(name, unicode.IsControl)
}

// checkGuardKey rejects guard keys no store can keep. An empty key usually
// means a field the handler expected (metadata, an expandable id) was
// absent, and claiming it would make every such event share one key.
func checkGuardKey(scope, key string) error {
	if err := checkKey("Guard scope", scope); err != nil {
		return err
	}
	if err := checkKey(fmt.Sprintf("Guard key (scope %q)", scope), key); err != nil {
		return err
	}
	return nil
}

// checkLookedUpGuard is checkGuardKey for op, a look-up of a guard's
// claim.
func checkLookedUpGuard(op, scope, key string) error {
	if err := checkGuardKey(scope, key); err != nil {
		return errorf("%s: %w", op, err)
	}
	return nil
}

// maxKeyLen bounds, in bytes, the text a PostgreSQL index keeps: an event
// id, a guard's scope and key (CheckOrder's and OnCurrent's objects' too).
const maxKeyLen = keytext.MaxKeyLen

// checkKey is checkText for required text that a store indexes, which
// refuses text longer than maxKeyLen too.
func checkKey(field, value string) error {
	if p := keytext.KeyProblem(value); p != "" {
		return errorf("%w: %s %s", ErrInvalidKey, field, p)
	}
	return nil
}

// Tx is the transaction a handler runs in. It is store-neutral; the
// PostgreSQL store's transaction also gives its pgx.Tx through [PgxTx].
// A Tx is valid only until the handler returns.
type Tx interface {
	// Guard claims the business key (scope, key) in this transaction and
	// reports whether this is the first claim of it. Like the event claim, it
	// commits or rolls back with the transaction, and a claim of the same key
	// held by another transaction in flight makes Guard wait for that
	// transaction to end. Claiming a key this transaction already holds
	// reports false. The key is one for the store, whatever connected
	// account the event came from: put the account in a key of an id that
	// repeats across accounts (a capability's card_payments).
	Guard(ctx context.Context, scope, key string) (first bool, err error)

	// AfterCommit registers fn to run after the transaction commits, in
	// registration order, on the goroutine that ran the handler and with a
	// context that is not cancelled with the request. It never runs when the
	// transaction rolls back or the event is skipped. A failure there cannot
	// undo the commit, and a crash before it runs loses it: use it for what
	// may be lost, such as cache invalidation or metrics, and a [Task] for
	// a side effect that must happen (an email, an API call). The funcs run
	// before the delivery is answered and outside Config.Timeout: keep them
	// short. A func registered once the handler has returned (by a
	// goroutine it left behind) never runs.
	AfterCommit(fn func(ctx context.Context))

	// A Tx is not safe for concurrent use: it runs one statement at a
	// time, and a Guard, a task's Enqueue, CheckOrder or OnCurrent's
	// statements, or (PgxStore) the SQL of PgxTx, started from another
	// goroutine while one of them runs fails with ErrTxBusy. The context
	// a handler is given is cancelled when it returns; a statement it
	// left running then (from a goroutine of its own) is waited for, and
	// the attempt fails with ErrTxBusy, rolled back.

	// EventID is the id of the event this transaction claimed.
	EventID() string
	// EventType is the type of that event.
	EventType() string
}

// EventRecord is one row of a store's ledger of claimed events.
type EventRecord struct {
	EventID    string
	EventType  string
	ObjectID   string
	Account    string
	Livemode   bool
	Outcome    Outcome // OutcomeProcessed, OutcomeSkipped or OutcomeIgnored
	SkipReason string  // a skipped event's Skip reason, its first 1000 bytes; empty otherwise
	// ReceivedAt is Claim.ReceivedAt: when the delivery arrived, on
	// Config.Now (an inbox's event: when it was stored, on InboxConfig.Now).
	ReceivedAt time.Time
	// ProcessedAt is when the event was claimed, on the store's own clock:
	// as its transaction began, before the handler ran, not at the commit.
	// EventFilter's Since and Until bound it.
	ProcessedAt time.Time
}

// EventFilter selects ledger records for ListEvents ([MemoryStore] and
// [PgxStore]). The zero value selects the newest events of every kind.
type EventFilter struct {
	// Outcomes keeps records with one of these outcomes (OutcomeProcessed,
	// OutcomeSkipped, OutcomeIgnored); empty keeps all.
	Outcomes []Outcome
	// EventType and ObjectID, when not empty, keep the records that match
	// them exactly.
	EventType string
	ObjectID  string
	// Account, when not empty, keeps the records of that connected
	// account's events (EventRecord.Account).
	Account string
	// Since and Until bound ProcessedAt: Since <= ProcessedAt < Until. A
	// zero time leaves that side open; another time outside the years 1 to
	// 9999 is refused, and so is a Since not before Until (equal ones
	// included), a range that holds no time.
	Since, Until time.Time
	// After, when its EventID is not empty, keeps the records that come
	// after this position in ListEvents' order: claimed before it, or in
	// the same microsecond with a smaller event id (byte order). Set to
	// the last record of a page (EventRecord.Position), it gives the next
	// page: no record listed twice or left out, also when several share a
	// microsecond and while new ones are claimed (they come before the
	// first page). A position without its event id or its processed time
	// is refused.
	After EventPosition
	// Limit is the most records returned. Defaults to 100; at most
	// MaxListLimit, and negative is refused.
	Limit int
}

// EventPosition is a record's place in ListEvents' order:
// EventFilter.After lists what comes after it.
type EventPosition struct {
	ProcessedAt time.Time
	EventID     string
}

// Position is r's place in ListEvents' order, for EventFilter.After.
func (r EventRecord) Position() EventPosition {
	return EventPosition{ProcessedAt: r.ProcessedAt, EventID: r.EventID}
}

// after reports whether r comes after p in ListEvents' order; every
// record does when p is the zero position.
func (p EventPosition) after(r *EventRecord) bool {
	return p.EventID == "" || comesAfter(r.ProcessedAt, r.EventID, p.ProcessedAt, p.EventID)
}

// comesAfter reports whether the record at (at, id) comes after the one at
// (pAt, pID) in a list ordered newest first, then by event id, descending
// (byte order): the order of ListEvents and Inbox.List.
func comesAfter(at time.Time, id string, pAt time.Time, pID string) bool {
	return at.Before(pAt) || at.Equal(pAt) && id < pID
}

// MaxListLimit is the largest EventFilter.Limit.
const MaxListLimit = 10000

// defaultListLimit is EventFilter.Limit's default.
const defaultListLimit = 100

// check validates f and applies its defaults.
func (f *EventFilter) check() error {
	if err := checkLimit("EventFilter", &f.Limit); err != nil {
		return err
	}
	if err := checkText("EventFilter.EventType", f.EventType, false); err != nil {
		return err
	}
	if err := checkText("EventFilter.ObjectID", f.ObjectID, false); err != nil {
		return err
	}
	if err := checkText("EventFilter.Account", f.Account, false); err != nil {
		return err
	}
	if err := checkRange("EventFilter", f.Since, f.Until); err != nil {
		return err
	}
	var err error
	if f.After.ProcessedAt, err = checkPosition("EventFilter.After", f.After.EventID, "ProcessedAt", f.After.ProcessedAt,
		"processed time and event id (EventRecord.Position)"); err != nil {
		return err
	}
	for _, o := range f.Outcomes {
		switch o {
		case OutcomeProcessed, OutcomeSkipped, OutcomeIgnored:
		default:
			return errorf("EventFilter.Outcomes: %q is never stored (processed, skipped or ignored are)", o)
		}
	}
	return nil
}

// matches reports whether r passes f, as the PostgreSQL query filters it.
func (f *EventFilter) matches(r *EventRecord) bool {
	return (len(f.Outcomes) == 0 || slices.Contains(f.Outcomes, r.Outcome)) &&
		(f.EventType == "" || r.EventType == f.EventType) &&
		(f.ObjectID == "" || r.ObjectID == f.ObjectID) && (f.Account == "" || r.Account == f.Account) &&
		inRange(r.ProcessedAt, f.Since, f.Until) && f.After.after(r)
}

// GuardRecord is one claimed natural key.
type GuardRecord struct {
	Scope   string
	Key     string
	EventID string // the event whose transaction claimed it
	// ClaimedAt is when the guard was claimed, on the store's own clock,
	// not Config.Now: PostgreSQL's at the Guard call, MemoryStore's at the
	// commit. Retention.Guards counts from it.
	ClaimedAt time.Time
}

// maxAttempts bounds how often a store runs one event's transaction when
// the database fails it for a deadlock or a serialization conflict.
// Between two attempts PgxStore pauses at random (conflictPause), and
// MemoryStore waits for the transaction that won (Run), so that the
// transactions that collided do not meet again at once: a transaction
// among n crossing each other's keys needs at most about n attempts, and
// a delivery that still fails is answered 500 and sent again by Stripe.
const maxAttempts = 5

// rerunCut is the error of a Run whose ctx ended before the store ran
// again the transaction that conflict (a deadlock, a serialization
// failure) failed: the context's, as after any of Run's waits the
// context ends, on both stores alike. The conflict is named, with %v: a
// run its caller cut is no conflict for a caller to run again.
func rerunCut(ctx context.Context, conflict error) error {
	return errorf("%w before the transaction ran again after: %v", ctx.Err(), conflict)
}

// pause waits d and reports true, or false once ctx ends first: the
// waits of the stores, of Prune and of the inbox's connections.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// txState is the store-independent part of a transaction: its event, its
// after-commit funcs and whether it has ended.
type txState struct {
	claim Claim

	mu     sync.Mutex
	ended  bool
	sealed bool // the handler returned (runHandler): its SQL is refused
	busy   bool // a statement runs in it (see enter)
	sent   int  // statements begun in it (see enter and count)
	// left, when not nil, is closed by the leave of a statement the
	// handler left running when it returned (see runHandler).
	left chan struct{}
	// open holds the results a handler's statements left open (a query's
	// rows, a batch's results): they hold the transaction's connection
	// until closed (see opened).
	open        []openResult
	afterCommit []func(ctx context.Context)
}

// openResult is a result of the handler's that holds the transaction's
// connection until it is closed: a query's rows, a batch's results.
type openResult interface {
	// closeResult closes it for the store: runHandler calls it, once no
	// call of the handler's can reach it any more.
	closeResult()
}

// errStatementLeftRunning fails an attempt whose handler returned while a
// statement it began, from a goroutine of its own, was still running in
// its transaction.
var errStatementLeftRunning = errorf("%w: the handler returned while one of its statements still ran (a goroutine it left behind); the transaction was rolled back", ErrTxBusy)

// errResultsLeftOpen fails an attempt whose handler returned with a
// query's rows or a batch's results still open: not closed, or still read
// by a goroutine it left behind.
var errResultsLeftOpen = errorf("%w: the handler returned with a query's rows or a batch's results still open (not closed, or read by a goroutine it left behind); the transaction was rolled back", ErrTxBusy)

// runHandler runs apply on the transaction t, with a context that is
// cancelled when apply returns, as net/http cancels a request's. From then
// on the handler's statements, and its calls on the results they left
// open, are refused. If one is still running, from a goroutine the
// handler left behind, its context is cancelled, the statement is waited
// for, and the attempt fails with errStatementLeftRunning: what that
// statement did is unknown, and a commit or a rollback must not share the
// connection with it. Results still open (rows not closed, or read by such
// a goroutine) are closed here, once the context is cancelled (a query
// still running ends rather than being read to its end), which no call of
// the handler's can reach any more, and the attempt fails with
// errResultsLeftOpen. Either way an error the handler returned is kept in
// the attempt's error, as text. Closing a batch runs its queued callbacks,
// as pgx does; one that panics is reported with the attempt's error.
//
// It does so in a defer, so that a panic of apply, which goes on up once
// the statement ended, does not reach the store's rollback while the
// statement still holds the connection.
func (t *txState) runHandler(ctx context.Context, apply ApplyFunc, tx Tx) (err error) {
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer func() {
		t.mu.Lock()
		t.sealed = true
		var left chan struct{}
		if t.busy {
			left = make(chan struct{})
			t.left = left
		}
		t.mu.Unlock()
		// Before the results left open are closed too: closing reads
		// what remains of them, which a query may still be producing, or
		// waiting for a lock to produce.
		cancel()
		// The handler's own error is kept as text beside ErrTxBusy: for
		// the operator, the reason it returned early; not wrapped, since
		// a Skip, Permanent or Snooze in it would change what the failed
		// attempt means.
		returned := err
		busy := func(e error) error {
			if returned != nil {
				return errorf("%w; the handler returned: %v", e, returned)
			}
			return e
		}
		if left != nil {
			<-left
			err = busy(errStatementLeftRunning)
		}
		t.mu.Lock()
		open := t.open
		t.open = nil
		t.mu.Unlock()
		var closing error // a batch's queued callback that panicked
		for i := len(open) - 1; i >= 0; i-- {
			func() {
				defer recoverPanic(&closing)
				open[i].closeResult()
			}()
		}
		if len(open) > 0 && left == nil {
			err = busy(errResultsLeftOpen)
		}
		if closing != nil {
			err = errorf("%w; closing them: %w", err, closing)
		}
	}()
	// Describable before the store reads it (a skip's reason): an
	// ApplyFunc given to Run directly has no dispatcher to make it so.
	return describableError(apply(hctx, tx))
}

// hasAfterCommit reports whether AfterCommit funcs wait for the commit.
// (runHandler sealed the transaction when the handler returned.)
func (t *txState) hasAfterCommit() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.afterCommit) > 0
}

// enter begins a statement in the transaction, which leave ends. It
// returns ErrTxDone once the store has begun to end the transaction: from
// then on no statement of the handler's, through its pgx.Tx or a Tx method
// (Guard, a task's Enqueue, OnCurrent's), may run in it, nor in the next
// event's transaction that a chained commit begins on the same connection.
// It returns ErrTxBusy while another statement runs in it, from another
// goroutine, or while a result of an earlier one is open: a transaction
// runs one statement at a time (PostgreSQL's runs on one connection, which
// pgx must not use from two goroutines at once, nor for a statement while
// rows are unread), and MemoryStore refuses the overlap as PgxStore does,
// so that a unit test shows it.
func (t *txState) enter() error { return t.enterCounting(1) }

// enterCounting is enter for a call that sends n statements as one, or 0
// when it counts its statements itself (count) as it sends them: the
// count then holds what went out before one failed (see
// chainedSessionLost).
func (t *txState) enterCounting(n int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.refusalLocked(); err != nil {
		return err
	}
	if len(t.open) > 0 {
		return ErrTxBusy
	}
	t.busy = true
	t.sent += n
	return nil
}

// use begins a call on a result the handler holds open (see opened), which
// leave ends: refused like a statement once the store has begun to end the
// transaction, or while another call or statement runs.
func (t *txState) use() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.refusalLocked(); err != nil {
		return err
	}
	t.busy = true
	return nil
}

// refusalLocked is why nothing may begin in the transaction now, or nil.
func (t *txState) refusalLocked() error {
	if t.sealed || t.ended {
		return ErrTxDone
	}
	if t.busy {
		return ErrTxBusy
	}
	return nil
}

// opened records r, a result that holds the connection until closed, left
// open by the statement that runs now: from now on statements are refused
// with ErrTxBusy until closed(r), and if the handler returns first,
// runHandler closes it.
func (t *txState) opened(r openResult) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open = append(t.open, r)
}

// closed forgets the results rs: they were closed, or read to their end.
func (t *txState) closed(rs ...openResult) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open = slices.DeleteFunc(t.open, func(o openResult) bool { return slices.Contains(rs, o) })
}

// count adds n statements to those begun in the transaction: the store's
// own, or those a pseudo-nested transaction runs unseen.
func (t *txState) count(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sent += n
}

// statements is how many statements were begun in the transaction.
func (t *txState) statements() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sent
}

func (t *txState) leave() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.busy = false
	if t.left != nil {
		close(t.left)
		t.left = nil
	}
}

func (t *txState) EventID() string   { return t.claim.EventID }
func (t *txState) EventType() string { return t.claim.EventType }

func (t *txState) AfterCommit(fn func(ctx context.Context)) {
	if fn == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// Once the handler has returned (sealed), a func that a goroutine it
	// left behind registers is dropped, as its statements are refused:
	// whether it ran would depend on whether it came before the commit
	// ended.
	if !t.ended && !t.sealed {
		t.afterCommit = append(t.afterCommit, fn)
	}
}

// end marks the transaction ended and, when committed, runs the
// after-commit funcs with a context detached from ctx's cancellation. A
// panicking func does not stop the others; its panic goes to
// claim.OnAfterCommitPanic.
func (t *txState) end(ctx context.Context, committed bool) {
	t.mu.Lock()
	fns := t.afterCommit
	t.afterCommit = nil
	t.ended = true
	t.mu.Unlock()
	if !committed || len(fns) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	for _, fn := range fns {
		if p := callRecover(ctx, fn); p != nil {
			t.reportPanic(ctx, p)
		}
	}
}

func (t *txState) reportPanic(ctx context.Context, p *PanicError) {
	if t.claim.OnAfterCommitPanic != nil {
		t.claim.OnAfterCommitPanic(p)
		return
	}
	slog.Default().LogAttrs(ctx, slog.LevelError, "idempotency: an AfterCommit func panicked after the commit",
		slog.String("event_id", t.claim.EventID), slog.String("event_type", t.claim.EventType),
		slog.String("panic", panicText(p.Value)), slog.String("stack", string(p.Stack)))
}

func callRecover(ctx context.Context, fn func(context.Context)) *PanicError {
	var err error
	func() {
		defer recoverPanic(&err)
		fn(ctx)
	}()
	p, _ := err.(*PanicError)
	return p
}

func (c Claim) receivedAt() time.Time {
	if c.ReceivedAt.IsZero() {
		return time.Now()
	}
	return c.ReceivedAt
}

// nilApplyOutcome is what a Run with a nil apply records.
func (c Claim) nilApplyOutcome() Outcome {
	if c.Outcome == OutcomeIgnored {
		return OutcomeIgnored
	}
	return OutcomeProcessed
}
