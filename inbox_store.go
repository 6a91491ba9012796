package idempotency

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seed-a84bb619/idempotency/internal/envelope"
)

// leaseExpiredCause is what an expired lease may mean, in every text that
// reports one (ErrLeaseExpired, where it is written out for go doc,
// leaseExpiredFormat, the warning of an attempt at such an event): the
// replica that found it expired cannot tell a worker that died, hung or
// lost its connection from one whose clock runs behind its own. Quoted
// inside an SQL literal: no quote, no %.
var leaseExpiredCause = strings.TrimPrefix(ErrLeaseExpired.Error(), "idempotency: lease expired: ")

// leaseExpiredFormat is an event's last error once the lease of its
// attempt ran out with no end recorded, %s the attempt's number: on the
// attempt after it while that runs, and on the dead letter when it was
// the last. The stores fill it in alike (PostgreSQL's format() takes the
// same %s).
var leaseExpiredFormat = "lease expired after attempt %s: " + leaseExpiredCause

// leaseExpired is leaseExpiredFormat filled in for attempt.
func leaseExpired(attempt int) string {
	return fmt.Sprintf(leaseExpiredFormat, strconv.Itoa(attempt))
}

// leaseExpiredErr is the error of an attempt whose lease expired with its
// end not recorded, as OnResult, the log and the Observer get it: it
// wraps ErrLeaseExpired (and cause, what the attempt ended with when its
// worker came back, when not nil), and its text is the event's last
// error's, "lease expired after attempt N: its worker died, ...", then
// cause's.
func leaseExpiredErr(attempt int, cause error) error {
	text := errPrefix + leaseExpired(attempt)
	if cause == nil {
		return &packageError{text: text, err: ErrLeaseExpired}
	}
	return &packageErrors{text: text + ": " + quotedText(cause), errs: []error{ErrLeaseExpired, cause}}
}

// InboxState is where an event stands in the inbox.
type InboxState string

// The states of an inbox event. Pending, processing and failed events are
// still to be applied; the others are final until [Inbox.Redrive] moves a
// dead-lettered, failed or ignored event back to pending.
const (
	// InboxPending: stored, waiting for a worker.
	InboxPending InboxState = "pending"
	// InboxProcessing: a worker holds it under a lease; if the worker dies,
	// the lease expires and the event is retried (that death counts as an
	// attempt).
	InboxProcessing InboxState = "processing"
	// InboxProcessed: the handler ran and its writes committed with the
	// event's claim, or the event had been processed before.
	InboxProcessed InboxState = "processed"
	// InboxSkipped: the handler, or a task's func, returned [Skip].
	InboxSkipped InboxState = "skipped"
	// InboxFailed: the last attempt failed; the next one is due at
	// NextAttemptAt.
	InboxFailed InboxState = "failed"
	// InboxDeadLetter: every attempt failed; it stays until redriven.
	InboxDeadLetter InboxState = "dead_letter"
	// InboxIgnored: no handler was registered for its type
	// (Config.RecordIgnored at ingest, or the handler was removed since
	// and InboxConfig.RetryUnhandledFor has passed). No claim is written:
	// its row keeps its payload until Prune deletes it
	// (Retention.Payloads), and a redrive (RedriveFilter.States) has a
	// release with the handler apply it. Events only: a task is never
	// ignored.
	InboxIgnored InboxState = "ignored"
)

// Final reports whether st is an end state: processed, skipped,
// dead_letter or ignored, not one still to be applied (pending,
// processing, failed). Only an event in a final state can be forgotten
// (Forget). What is not a state (the empty State of a Lookup that found
// nothing) is not final.
func (st InboxState) Final() bool {
	switch st {
	case InboxProcessed, InboxSkipped, InboxDeadLetter, InboxIgnored:
		return true
	}
	return false
}

// Redrivable reports whether [Inbox.Redrive] takes events in st:
// dead_letter, failed and ignored (events only: a task is never ignored).
func (st InboxState) Redrivable() bool {
	return st == InboxDeadLetter || st == InboxFailed || st == InboxIgnored
}

// inboxState is the inbox state that records an applied event's outcome.
func inboxState(outcome Outcome) InboxState {
	switch outcome {
	case OutcomeSkipped:
		return InboxSkipped
	case OutcomeIgnored:
		return InboxIgnored
	}
	return InboxProcessed
}

// stateOutcome is the outcome of an attempt that left its event in st, an
// applied event's state (inboxState's inverse), or pending, a snoozed
// task's.
func stateOutcome(st InboxState) Outcome {
	switch st {
	case InboxPending: // a snoozed task
		return OutcomeQueued
	case InboxSkipped:
		return OutcomeSkipped
	case InboxIgnored:
		return OutcomeIgnored
	}
	return OutcomeProcessed
}

// inboxStates are the states in the order InboxStates gives them.
var inboxStates = []InboxState{
	InboxPending, InboxProcessing, InboxFailed,
	InboxDeadLetter, InboxProcessed, InboxSkipped,
	InboxIgnored,
}

// InboxStates returns every [InboxState] in the order an operator reads
// them: still to be applied, then given up on, then final.
func InboxStates() []InboxState { return slices.Clone(inboxStates) }

// InboxKind tells the events of an inbox from its tasks.
type InboxKind string

// The kinds of inbox rows.
const (
	// KindEvent: a Stripe event, stored at ingest.
	KindEvent InboxKind = "event"
	// KindTask: a [Task], enqueued in an event's transaction. Its EventID
	// is the task's id, task:<name>:<key>, and its EventType the task's
	// name.
	KindTask InboxKind = "task"
)

// CanBe reports whether a row of kind k can be in state st: a task is
// never ignored (an unregistered task fails and is retried), an event can
// be in every state. The empty kind, events and tasks together, can be in
// every state.
func (k InboxKind) CanBe(st InboxState) bool {
	return k != KindTask || st != InboxIgnored
}

// InboxRecord is one event or task in the inbox, without its payload.
//
// A task's record (Kind task) holds its id (task:<name>:<key>), its name
// in EventType and, in Created, when its event's transaction enqueued it;
// ObjectID, Account and APIVersion are empty and Livemode is false: a
// task has no object, and the tasks of one name are not ordered.
type InboxRecord struct {
	Kind       InboxKind
	EventID    string
	EventType  string
	ObjectID   string // Event.ObjectID; the events of one object (ObjectID and Account) are applied one at a time, oldest first
	Account    string
	Livemode   bool
	APIVersion string
	Created    time.Time // the event's created time (one-second resolution)

	State InboxState
	// Attempt counts the attempts made, a lease that expired included.
	Attempt int
	// LastError is the last failed attempt's error, a skipped task's Skip
	// reason, or why a worker recorded the event ignored (no handler for its
	// type within InboxConfig.RetryUnhandledFor), at most 1000 bytes; never
	// the payload. A stripe-go error the handler's error wraps
	// (*stripe.Error, or the typed error of its Err; a v2 API's
	// *stripe.V2RawError or typed error, by its type and code) reads by its
	// status, type, codes and request id, not as its JSON, which holds the
	// objects of Stripe's answer (a client secret, the customer's details).
	// A redrive keeps it until the next attempt ends, and so do a task's
	// [Snooze] and a lease given back before its attempt started (Run
	// stopping; see Inbox.Run), which puts back the State, Attempt and
	// AttemptedAt of the attempt before it too. An attempt made because
	// the lease of the one before it expired shows, while it runs, that
	// the lease expired; given back unstarted, it still shows it. A
	// skipped event's reason is not kept here but with its claim:
	// EventRecord.SkipReason, as the store's LookupEvent reads it.
	LastError string
	// Redrives counts the times [Inbox.Redrive] moved it back to pending
	// (by ids, type, object, account, range or all: idemctl redrive and
	// the dashboard's Redrive too), and RedrivenAt is when the last one
	// did, by the inbox's clock (InboxConfig.Now): what tells an event
	// dead-lettered again after a redrive from one never redriven. 0 and
	// zero before the first redrive, and for every row stored before they
	// were kept. A dry run changes neither, and no attempt does: they
	// stay through the attempts that follow and the state they end in.
	// Every record carries them: Lookup's, List's and HeldBy's, and the
	// one an Observer's Attempt gets, as its attempt was leased.
	Redrives   int
	RedrivenAt time.Time

	ReceivedAt    time.Time // when the delivery was stored
	AttemptedAt   time.Time // when the last attempt started; zero before the first
	NextAttemptAt time.Time // when it is due (pending, failed); zero when final
	FinishedAt    time.Time // when it reached a final state; zero before

	// LeaseUntil is, while it is processing, when the lease of its
	// attempt ends: until then no other worker takes it. Past, its worker
	// died, hung or lost its connection (or is still committing in a
	// transaction begun in time), and the next lease takes it over and
	// attempts it again. Zero in every other state: no lease is held.
	LeaseUntil time.Time
}

// InboxHolder is an event that holds another event of its object back:
// see [Inbox.HeldBy].
type InboxHolder struct {
	// InboxRecord is the holder's record; its LeaseUntil, while it is
	// processing, is when its worker's lease expires (past, when its
	// transaction is still open, or, for an earlier event, when its
	// worker died and no lease has taken it over yet).
	InboxRecord
	// Earlier reports that it sorts before the held event by (Created,
	// EventID): it is to be applied first. When false it sorts after, and
	// holds the event back because a worker is applying it.
	Earlier bool
}

// maxInboxHolders bounds what [Inbox.HeldBy] returns: the first holders
// that sort before the event, and the first that sort after it.
const maxInboxHolders = 100

// inboxRow is an inbox event with what only the stores and workers see.
type inboxRow struct {
	InboxRecord
	Payload []byte    // the verified request body, as received
	DueAt   time.Time // leased: when it came due (its next attempt's time, or its lost lease's end)
	// PrevAttemptedAt and PrevState are, on a leased row, its AttemptedAt
	// (zero before the first attempt) and State (pending or failed;
	// processing when its lease expired) before the lease: what a
	// give-back restores.
	PrevAttemptedAt time.Time
	PrevState       InboxState
	// LeaseExpired is set on a row leased again because the lease of its
	// previous attempt expired: its worker died, hung or lost its
	// connection, maybe because of this very event. Such a row is leased
	// alone (see inboxLease), attempted once the attempts at the events
	// leased before it have ended (at the latest Inbox.holdUntil), and Run
	// leases nothing else while it runs.
	LeaseExpired bool
	// Seq is the store's sequence number taken when the event was stored
	// (see current.go); 0 when unknown.
	Seq int64
	// Trace is what Observer.Link returned when the event or the task was
	// stored: the traceparent of the delivery, or of what enqueued the
	// task; "" when none.
	Trace string
	// env is Payload parsed, when a worker parsed it ahead (inboxWorker.next).
	env *envelope.Envelope
	// leaseLost is set when the attempt at the leased row found its lease
	// taken over: its end was not recorded.
	leaseLost bool
	// cut is Run's, on a row one of its workers attempts: it counts the
	// attempt if Run's ShutdownTimeout cut it (see shutdownCut).
	cut *shutdownCut
	// insertRetried is set by the store on a row its insert found stored
	// when that insert had run again, on another connection, after a
	// connection failure: the failed try may have stored the row, its
	// answer lost, and its delivery is answered duplicate; the workers are
	// woken for it all the same.
	insertRetried bool
}

// parsed parses the row's payload, once.
// logIDs returns the log's names of the row, a task's id and name or an
// event's id and type (as Result.appendIDs), then more.
func (r *inboxRow) logIDs(more ...slog.Attr) []slog.Attr {
	res := Result{EventID: r.EventID, EventType: r.EventType}
	if r.Kind == KindTask {
		res.Kind = KindTask
	}
	return res.appendIDs(nil, more...)
}

func (r *inboxRow) parsed() (*envelope.Envelope, error) {
	if r.env == nil {
		env, err := envelope.ParseAny(r.Payload)
		if err != nil {
			return nil, err
		}
		r.env = &env
	}
	return r.env, nil
}

// inboxBackend is what an [Inbox] needs of its store. Both MemoryStore and
// PgxStore implement it with the same semantics, proven by one conformance
// suite. Every time is the inbox's clock (InboxConfig.Now), never the
// store's, so that tests can drive retries with a fake clock.
type inboxBackend interface {
	Store

	// inboxEnqueue stores r (state pending, due at r.NextAttemptAt, or
	// ignored) unless an event with its id is in the inbox already, and
	// reports whether it did. Nothing else is touched: a known id, whatever
	// its state, is a duplicate.
	inboxEnqueue(ctx context.Context, r *inboxRow) (inserted bool, err error)

	// inboxLease moves up to limit due events to processing, with Attempt
	// incremented, AttemptedAt = now, LeaseUntil = now + lease, and returns
	// them with their payloads. Due: pending or failed with NextAttemptAt <=
	// now, or processing with LeaseUntil <= now (a worker died). An expired
	// lease whose Attempt is already maxAttempts is not leased again: it
	// goes to dead letter with LastError saying the lease expired, and its
	// record, as dead-lettered, is returned in dead; with an error too when
	// the lease is known to have moved it all the same (a COMMIT whose
	// answer was lost, found committed), and only then.
	//
	// An expired lease is taken alone, with LeaseExpired set and LastError
	// saying the lease expired (leaseExpiredFormat): events are
	// taken in the order they came due (an expired lease at its end), and a
	// lease stops before the first expired one unless that is the first it
	// takes, which it then returns alone. The events a process that died
	// had leased expire together; each is then attempted on its own, so an
	// event that kills every process that runs it no longer takes the
	// others down with it at each attempt.
	//
	// Per object (ObjectID not empty): an event is not leased while another
	// event of the same object is processing under an unexpired lease, nor
	// while an event of the same object that sorts before it by (Created,
	// EventID) is pending, failed or processing. Dead-lettered, finished
	// and ignored events never hold the others back.
	//
	// Two concurrent calls, in this process or another, never lease one
	// event twice, and never lease two events of one object.
	inboxLease(ctx context.Context, now time.Time, limit int, lease time.Duration, maxAttempts int) (rows []inboxRow, dead []InboxRecord, err error)

	// inboxSettle records the end of attempt `attempt` of eventID, leased
	// at attemptedAt: it sets state (failed, dead_letter, processed,
	// ignored, skipped for a task, pending for a snoozed task), LastError,
	// NextAttemptAt (zero unless failed or pending) and, for a final
	// state, FinishedAt = now. An attempt that does not count (uncounted:
	// a snoozed task, or an event given back untried) has its Attempt go
	// back one and its AttemptedAt become shownAttemptedAt: the lease's
	// own for a snoozed task, the one before the lease for an event given
	// back, which goes back to the state it had before the lease (pending
	// or failed, due at nextAt; its caller gives the LastError it had
	// too). State processing gives back an event leased because its lease
	// expired as it was before: under the lease it lost, ending at nextAt
	// (its DueAt), so that the next lease takes it alone again. It is fenced:
	// it changes nothing and reports false unless the event is processing
	// under exactly that lease (attempt and AttemptedAt), so a worker
	// whose lease expired cannot overwrite a newer attempt's result, not
	// even one that a redrive numbered alike.
	inboxSettle(ctx context.Context, eventID string, attempt int, attemptedAt time.Time, st InboxState, lastError string, nextAt, now time.Time, uncounted bool, shownAttemptedAt time.Time) (bool, error)

	// inboxRedrive moves the events f selects, in f.States (default
	// dead_letter), back to pending with Attempt 0, NextAttemptAt = now,
	// FinishedAt cleared (LastError is kept), Redrives incremented and
	// RedrivenAt = now, all at once, and returns how many events and how
	// many tasks; with f.DryRun it only counts them, changing nothing.
	inboxRedrive(ctx context.Context, f RedriveFilter, now time.Time) (events, tasks int, err error)

	// inboxStats counts the events by state and finds the oldest ReceivedAt
	// among those still to be applied (pending, failed, processing).
	inboxStats(ctx context.Context) (InboxStats, error)

	// inboxList returns the events f selects, newest received first.
	inboxList(ctx context.Context, f InboxFilter) ([]InboxRecord, error)

	// inboxHeldBy returns, in the object's order (Created, EventID), the
	// events that keep eventID from being leased at now by inboxLease's
	// rule, when eventID waits: it has an object, and it is pending, failed
	// or processing past its lease with no transaction open. They are the pending, failed and
	// processing events of its object that sort before it (the first
	// limit of them), and those that sort after it and are processing
	// under an unexpired lease or in a transaction still open (the first
	// limit of them). Nothing holds an event that does not wait, or that
	// the inbox does not have.
	inboxHeldBy(ctx context.Context, eventID string, now time.Time, limit int) ([]InboxHolder, error)

	// inboxPayload returns the payload of an inbox event (a task's
	// arguments), and false when the inbox does not have it.
	inboxPayload(ctx context.Context, eventID string) ([]byte, bool, error)

	// Forget deletes eventID's claim, the guards its transaction claimed
	// and its finished inbox row; see PgxStore.Forget.
	Forget(ctx context.Context, eventID string) (bool, error)

	// taskStore is the store whose transactions' tasks the inbox's
	// workers take: the MemoryStore or PgxStore itself, also through a
	// type that embeds it.
	taskStore() inboxBackend
}

// inboxFence is set on the Claim of an inbox attempt: the store's Run
// makes the event's inbox row final in the transaction that applies it
// (processed, or skipped: the reason goes to the ledger, and the row's
// LastError is cleared), and fails with ErrLeaseLost, rolling back, unless
// the row is processing under exactly that lease and the lease still runs.
// While that transaction is open the row cannot be leased again.
type inboxFence struct {
	// Attempt and AttemptedAt identify the lease: a redrive starts the
	// attempt numbers again, the lease time tells two leases of one number
	// apart.
	Attempt     int
	AttemptedAt time.Time
	Now         time.Time
	// clock is the inbox's (InboxConfig.Now), read as the store begins
	// the attempt (begun).
	clock func() time.Time
	// Seq is the event's sequence number from ingest; 0 when unknown.
	Seq int64
	// chain, when not nil, is the worker's: on PostgreSQL the commit may
	// begin its next event's transaction (txChain).
	chain *txChain
}

// begun is when the store begins the attempt, on the inbox's clock: the
// fence holds only before the lease's end. Past it, a lease elsewhere
// counts the worker dead (a processing row it finds unlocked) and may take
// the earlier event of the object: an attempt begun then, however its
// worker was delayed (its callbacks, a full pool), would run beside it.
func (f *inboxFence) begun() time.Time { return f.clock() }

// RedriveFilter selects the events and tasks [Inbox.Redrive] moves back
// to pending. The zero value selects every dead-lettered event and task.
type RedriveFilter struct {
	// Kind, when not empty, selects events (KindEvent) or tasks (KindTask)
	// only.
	Kind InboxKind
	// EventIDs, when not empty, selects these events only (or tasks, by
	// their ids).
	EventIDs []string
	// EventType, when not empty, selects events of this type.
	EventType string
	// ObjectID and Account select as InboxFilter's do: ObjectID, when not
	// empty, selects the events of this object (data.object.id), under
	// every connected account and the platform's unless Account is set
	// too (Stripe reuses some object ids, a capability's card_payments,
	// in every account); Account, when not empty, selects the events of
	// this connected account (Event.Account) only: after it lost access
	// and reconnected, its dead letters without the others' (and, with
	// States dead_letter and failed, those still retried, each holding
	// back the account's newer events of its object until its next
	// attempt). A task has neither, not even one an event of the account
	// enqueued: with Kind task either is refused, and without Kind they
	// select events only.
	ObjectID string
	Account  string
	// Since and Until bound ReceivedAt: Since <= ReceivedAt < Until; a zero
	// time leaves that side open. Another time outside the years 1 to 9999
	// is refused, and so is a Since not before Until (equal ones
	// included), a range that holds no time.
	Since, Until time.Time
	// States are the states to redrive: dead_letter, failed, ignored,
	// or several. Defaults to dead_letter.
	//
	// Ignored selects events only (with Kind task it is refused: a task
	// is never ignored): those stored ignored by a process without a
	// handler for their type (Config.RecordIgnored; or a worker's, past
	// InboxConfig.RetryUnhandledFor), kept with their payloads until
	// Prune deletes them (Retention.Payloads). Redriven, one takes its
	// place in its object's order: it holds back the pending events of
	// its object created after it until it is applied, but those applied
	// already stay applied, and it is applied after them, out of order
	// (as an event Recover stores is; CheckOrder tells it). A worker
	// with no handler for its type fails it with ErrNoHandler, holding
	// its object back, until RetryUnhandledFor after it was received,
	// and records it ignored again at its first attempt after that. One
	// whose id the ledger has (a synchronous Handler with RecordIgnored
	// claimed it, or another delivery applied it) is found claimed and
	// recorded processed, nothing applied: to have it applied, Forget it,
	// which deletes its inbox row too, and deliver it again (resent from
	// Stripe's Dashboard, or Recover). Its API version was not checked
	// when it was stored, as no handler was to decode it, and the workers
	// do not check it: Config.StrictAPIVersion does not reject it, and its
	// data.object is decoded best-effort whatever its release train.
	//
	// With ignored, name what to redrive: EventType (the type the new
	// release handles), or EventIDs. With Config.RecordIgnored the
	// ignored events are also those of every type no release handles
	// (invoice.created beside invoice.paid); one of them redriven less
	// than RetryUnhandledFor after it was received fails with
	// ErrNoHandler until then, holding back the later events of its
	// object (a paid invoice credited up to an hour late), and Forget
	// refuses it meanwhile. Redrive takes any selection, Since and Until
	// alone or none; idemctl redrive and the dashboard refuse one
	// without a type or ids.
	States []InboxState
	// DryRun counts the events that would move, and moves none (nor
	// counts a redrive in their records' Redrives).
	DryRun bool
}

func (f *RedriveFilter) check() error {
	if len(f.States) == 0 {
		f.States = []InboxState{InboxDeadLetter}
	}
	if err := checkKind("RedriveFilter", f.Kind); err != nil {
		return err
	}
	for _, s := range f.States {
		if !s.Redrivable() {
			return errorf("RedriveFilter.States: %q cannot be redriven (dead_letter, failed and ignored can)", s)
		}
		if !f.Kind.CanBe(s) {
			return errorf("RedriveFilter.States: ignored holds events only, and RedriveFilter.Kind is task: a task is never ignored")
		}
	}
	if err := checkSelection("RedriveFilter", f.Kind, f.EventIDs, f.EventType, f.ObjectID, f.Account); err != nil {
		return err
	}
	return checkRange("RedriveFilter", f.Since, f.Until)
}

func (f *RedriveFilter) matches(r *InboxRecord) bool {
	return slices.Contains(f.States, r.State) && (f.Kind == "" || r.Kind == f.Kind) &&
		(len(f.EventIDs) == 0 || slices.Contains(f.EventIDs, r.EventID)) &&
		(f.EventType == "" || r.EventType == f.EventType) && ofObject(r, f.ObjectID, f.Account) &&
		inRange(r.ReceivedAt, f.Since, f.Until)
}

// InboxFilter selects the events and tasks [Inbox.List] returns. The zero
// value selects the newest 100 of either kind.
type InboxFilter struct {
	// Kind, when not empty, keeps events (KindEvent) or tasks (KindTask)
	// only.
	Kind InboxKind
	// EventIDs, when not empty, keeps these events only (or tasks, by
	// their ids: [Task.ID]).
	EventIDs []string
	// States, when not empty, keeps events and tasks in one of them.
	States []InboxState
	// EventType and ObjectID, when not empty, keep the events that match
	// them exactly. ObjectID alone selects the object under every
	// connected account and the platform's: Stripe reuses some object ids
	// (a capability's card_payments) in every account.
	EventType string
	ObjectID  string
	// Account, when not empty, keeps the events of this connected account
	// (Event.Account) only. Empty, it keeps every account's and the
	// platform's: no value selects the platform's own events alone (keep
	// the records whose Account is empty, and redrive them by EventIDs).
	// A task has neither an object nor an account: with Kind task,
	// ObjectID or Account is refused.
	Account string
	// Since and Until bound ReceivedAt: Since <= ReceivedAt < Until; a zero
	// time leaves that side open. Another time outside the years 1 to 9999
	// is refused, and so is a Since not before Until (equal ones
	// included), a range that holds no time.
	Since, Until time.Time
	// After, when its EventID is not empty, keeps the events that come
	// after this position in List's order: received before it, or in the
	// same microsecond with a smaller event id (byte order). Set to the
	// last record of a page (InboxRecord.Position), it gives the next
	// page: no event listed twice or left out, also when many share a
	// microsecond and while new ones arrive (they come before the first
	// page). A position without its event id or its received time is
	// refused.
	After InboxPosition
	// Limit is the most events returned. Defaults to 100; at most
	// MaxListLimit, and negative is refused.
	Limit int
}

// InboxPosition is a record's place in List's order: InboxFilter.After
// lists what comes after it.
type InboxPosition struct {
	ReceivedAt time.Time
	EventID    string
}

// Position is r's place in List's order, for InboxFilter.After.
func (r InboxRecord) Position() InboxPosition {
	return InboxPosition{ReceivedAt: r.ReceivedAt, EventID: r.EventID}
}

// after reports whether r comes after p in List's order; every record
// does when p is the zero position.
func (p InboxPosition) after(r *InboxRecord) bool {
	return p.EventID == "" || comesAfter(r.ReceivedAt, r.EventID, p.ReceivedAt, p.EventID)
}

func (f *InboxFilter) check() error {
	if err := checkLimit("InboxFilter", &f.Limit); err != nil {
		return err
	}
	if err := checkKind("InboxFilter", f.Kind); err != nil {
		return err
	}
	for _, s := range f.States {
		if !slices.Contains(inboxStates, s) {
			return errorf("InboxFilter.States: %q is not an inbox state", s)
		}
	}
	if err := checkSelection("InboxFilter", f.Kind, f.EventIDs, f.EventType, f.ObjectID, f.Account); err != nil {
		return err
	}
	var err error
	if f.After.ReceivedAt, err = checkPosition("InboxFilter.After", f.After.EventID, "ReceivedAt", f.After.ReceivedAt,
		"received time and event id (InboxRecord.Position)"); err != nil {
		return err
	}
	return checkRange("InboxFilter", f.Since, f.Until)
}

// checkPosition validates a list's After position, field its name, made
// of eventID and the time at, named timeName; what says what a position
// is. It returns at to the microsecond the stores keep, at which both
// compare it. A position with neither is none.
func checkPosition(field, eventID, timeName string, at time.Time, what string) (time.Time, error) {
	if at.IsZero() && eventID == "" {
		return at, nil
	}
	if err := checkText(field+".EventID", eventID, true); err != nil {
		return at, err
	}
	if err := checkFilterTime(field+"."+timeName, at); err != nil {
		return at, err
	}
	if at.IsZero() {
		// No record comes before the zero time: the list would be
		// empty, as if nothing came after the event.
		return at, errorf("%s.%s is not set: a position is a record's %s", field, timeName, what)
	}
	return at.Truncate(time.Microsecond), nil
}

func (f *InboxFilter) matches(r *InboxRecord) bool {
	return (len(f.States) == 0 || slices.Contains(f.States, r.State)) && (f.Kind == "" || r.Kind == f.Kind) &&
		(len(f.EventIDs) == 0 || slices.Contains(f.EventIDs, r.EventID)) &&
		(f.EventType == "" || r.EventType == f.EventType) && ofObject(r, f.ObjectID, f.Account) &&
		inRange(r.ReceivedAt, f.Since, f.Until) && f.After.after(r)
}

// checkSelection checks the texts a filter (InboxFilter, RedriveFilter)
// selects records by, each error naming filter's field: an id empty, or
// any of them with a NUL byte or invalid UTF-8, which no store keeps; an
// object or an account with kind task, which has neither.
func checkSelection(filter string, kind InboxKind, eventIDs []string, eventType, objectID, account string) error {
	switch {
	case kind == KindTask && objectID != "":
		return errorf("%s.ObjectID: a task has no object, and %s.Kind is task", filter, filter)
	case kind == KindTask && account != "":
		return errorf("%s.Account: a task has no account, and %s.Kind is task", filter, filter)
	}
	for i, id := range eventIDs {
		if err := checkText(fmt.Sprintf("%s.EventIDs[%d]", filter, i), id, true); err != nil {
			return err
		}
	}
	for _, f := range [...]struct{ field, value string }{{"EventType", eventType}, {"ObjectID", objectID}, {"Account", account}} {
		if err := checkText(filter+"."+f.field, f.value, false); err != nil {
			return err
		}
	}
	return nil
}

// ofObject reports whether r is of objectID and of account, an empty one
// matching any: an object id alone matches it under every account.
func ofObject(r *InboxRecord, objectID, account string) bool {
	return (objectID == "" || r.ObjectID == objectID) && (account == "" || r.Account == account)
}

// InboxStats is what an alert needs: how much waits, for how long, and how
// much was given up on.
type InboxStats struct {
	// Counts has an entry for every state, zero included: events and
	// tasks together.
	Counts map[InboxState]int
	// TaskCounts are the tasks among Counts, an entry for every state.
	TaskCounts map[InboxState]int
	// OldestPending is the ReceivedAt of the oldest event or task still
	// to be applied (pending, failed or processing); zero when there is
	// none.
	OldestPending time.Time
	// LastAttempt is when the newest attempt at an event or a task
	// started: the latest AttemptedAt of the rows the inbox holds, in
	// whatever state; zero when none was ever attempted (or Prune has
	// deleted every row that was). With events pending, a LastAttempt
	// older than a few poll intervals says that no worker runs (unless
	// each pending event waits behind a failed event of its object: the
	// rows cannot tell the two apart, a metric of each worker process's
	// [Inbox.Running] can); a recent one, with OldestPending growing, that workers run and fall
	// behind. Tasks pending say less: a snoozed task is pending, and not
	// attempted, until its snooze ends. An attempt given back unstarted
	// (a worker stopping) does not count.
	LastAttempt time.Time
	// Estimated holds the states whose count in Counts (and so in
	// TaskCounts or Events) is an estimate; nil when every count is
	// exact. Only the final states a worker never leaves (processed,
	// skipped, ignored) are ever estimated, by a store whose count of one
	// kind in one of them reached 50,000 rows: PgxStore counts that far,
	// then reports PostgreSQL's estimate of the rows (as of the table's
	// last ANALYZE, which autovacuum runs as the table grows), so that a
	// scrape costs what is still to apply, not what the retention window
	// keeps; an estimate below what it counted (a table never analyzed:
	// restored, upgraded) is not one, and it counts every row of them,
	// exact, until an ANALYZE. MemoryStore counts every row. The
	// states still to apply and dead_letter are always counted, row by
	// row.
	Estimated map[InboxState]bool
}

// Events is how many events, tasks left out, are in state: Counts[state]
// − TaskCounts[state].
func (st InboxStats) Events(state InboxState) int {
	return st.Counts[state] - st.TaskCounts[state]
}

// addEstimate adds n rows of kind in state, an estimate.
func (st *InboxStats) addEstimate(kind InboxKind, state InboxState, n int) {
	st.add(kind, state, n, time.Time{}, time.Time{})
	if st.Estimated == nil {
		st.Estimated = map[InboxState]bool{}
	}
	st.Estimated[state] = true
}

// statsExactLimit is how many rows of a kind in a final state, dead
// letters apart, a store that estimates counts counts before it
// estimates (InboxStats.Estimated).
const statsExactLimit = 50_000

// checkKind validates a filter's Kind: empty, event or task.
func checkKind(filter string, k InboxKind) error {
	if k != "" && k != KindEvent && k != KindTask {
		return errorf("%s.Kind %q is not one of event, task", filter, k)
	}
	return nil
}

func newInboxStats() InboxStats {
	st := InboxStats{Counts: make(map[InboxState]int, len(inboxStates)), TaskCounts: make(map[InboxState]int, len(inboxStates))}
	for _, state := range inboxStates {
		st.Counts[state], st.TaskCounts[state] = 0, 0
	}
	return st
}

// add counts n rows of kind in state; oldest is the earliest ReceivedAt
// among them if they are still to be applied, or zero, and attempted the
// latest AttemptedAt among them, or zero.
func (st *InboxStats) add(kind InboxKind, state InboxState, n int, oldest, attempted time.Time) {
	st.Counts[state] += n
	if kind == KindTask {
		st.TaskCounts[state] += n
	}
	if !oldest.IsZero() && (st.OldestPending.IsZero() || oldest.Before(st.OldestPending)) {
		st.OldestPending = oldest
	}
	if attempted.After(st.LastAttempt) {
		st.LastAttempt = attempted
	}
}

// checkLimit validates a list limit and applies its default.
func checkLimit(filter string, limit *int) error {
	switch {
	case *limit < 0 || *limit > MaxListLimit:
		return errorf("%s.Limit %d is outside 0..%d", filter, *limit, MaxListLimit)
	case *limit == 0:
		*limit = defaultListLimit
	}
	return nil
}

// The filter times every store can hold: PostgreSQL's timestamptz ends in
// the year 294276, and pgx encodes a time beyond about the year 294000 as
// microseconds that wrap around the int64, a time of another century
// (time.Unix(math.MaxInt64, 0) becomes 1969). The years 1 to 9999 are
// those of an event's created (checkEnvelope's range) and of RFC 3339;
// maxFilterTime is the first instant after them.
var (
	minFilterTime = time.Unix(minCreated, 0).UTC()
	maxFilterTime = time.Unix(maxCreated+1, 0).UTC()
)

// storableTime reports whether t is the zero time or a time in the years
// 1 to 9999.
func storableTime(t time.Time) bool {
	return t.IsZero() || !t.Before(minFilterTime) && t.Before(maxFilterTime)
}

// checkFilterTime rejects a bound no store can compare with: the zero
// time is an open bound.
func checkFilterTime(field string, t time.Time) error {
	if !storableTime(t) {
		return errorf("%s is not a time between the years 1 and 9999", field)
	}
	return nil
}

// checkRange rejects a time range that selects nothing, or that a store
// cannot hold.
func checkRange(filter string, since, until time.Time) error {
	if err := checkFilterTime(filter+".Since", since); err != nil {
		return err
	}
	if err := checkFilterTime(filter+".Until", until); err != nil {
		return err
	}
	if !since.IsZero() && !until.IsZero() && !since.Before(until) {
		return errorf("%s.Since (%s) is not before Until (%s)", filter, since.Format(time.RFC3339Nano), until.Format(time.RFC3339Nano))
	}
	return nil
}

// inRange reports since <= t < until, a zero bound being open.
func inRange(t, since, until time.Time) bool {
	return (since.IsZero() || !t.Before(since)) && (until.IsZero() || t.Before(until))
}
