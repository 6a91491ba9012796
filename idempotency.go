// Package idempotency makes every Stripe webhook change a Go service's data
// exactly once, however often, however concurrently and in whatever order
// Stripe delivers it.
//
// Mount a [Handler] on the webhook route, register one typed func per event
// type with [On], and give it a [Store] ([NewMemoryStore] for tests of
// handlers whose writes go through a fake, [NewPgxStore] for production
// and for tests of handlers that write through [PgxTx]). For every
// verified delivery the handler claims the event id and runs the
// registered func in one transaction: the claim and every business write
// commit together or not at all, so a crash, an error or a panic leaves
// nothing behind and Stripe's retry processes the event normally, while a
// repeated delivery is answered 200 without running anything. On
// PostgreSQL those writes go through [PgxTx], the transaction's pgx.Tx,
// which sqlc's queries generated for pgx (sql_package "pgx/v5") take; a
// *sql.DB or a *sql.Tx commits apart from the claim, and sqlc's queries
// generated for database/sql cannot join it.
//
// Event ids do not catch everything: Stripe may send two events for one
// change (invoice.paid and invoice.payment_succeeded for one invoice). Inside
// a handler, [Tx.Guard] claims a business key such as the invoice id in the
// same transaction, and an [Action] ties a side effect to one such key
// whichever event triggers it.
//
// An [Inbox] stores each verified event and answers at once, and its
// workers apply the events with retries, backoff and a dead letter. They
// also run tasks: a side effect outside the database (an email, a call to
// another API) is registered with [NewTask] and enqueued by a handler with
// [Task.Enqueue] in the event's transaction, once per key, and a worker
// carries it out after the commit, with the same idempotency key on every
// attempt. [Tx.AfterCommit] stays for what may be lost. Its Handler goes
// on the webhook route and [Inbox.Run] beside it (see the example of
// [NewInbox]); a test drives the workers with [Inbox.WorkDue] instead.
//
// Stripe does not deliver events in order. [OnCurrent] registers handlers
// that get the object an event is about as the API returns it now, and
// [CheckOrder] orders the payloads a handler applies. [Handler.Recover]
// replays missed events from the Events API.
//
// Package idempotencytest is the test kit: signed deliveries, a fake
// clock for the inbox, a fake Stripe API, a throwaway PostgreSQL.
//
// # Errors
//
// The errors to branch on are the package's Err sentinels and its error
// types ([SkipError], [PanicError], [DecodeError], [PermanentError],
// [SnoozeError]); compare with [errors.Is] and [errors.As]. What the
// package itself finds wrong with a delivery, an inbox attempt or a store
// call is one of them or wraps one. Other errors are passed on as they
// came, at most wrapped: the context's once ctx is done; those of the
// caller's own code (a handler, an action, a task, a [FetchFunc], a Store
// of another package), or a plain text about its misbehaviour (an error
// whose Error method panics, an outcome no delivery has); and
// PostgreSQL's, which [PgxStore] wraps in [ErrStoreUnavailable] only when
// the database cannot be reached (a missing table or a refused permission
// stays pgx's *pgconn.PgError). A configuration, option, filter or
// registration the package refuses ([Config], [InboxConfig], [Retention],
// a filter, a second concurrent [Inbox.Run]) is a plain error whose text
// names what is at fault, or, from [On], [OnCurrent], [NewAction] and
// [NewTask], a panic, unless its doc names a sentinel (such as
// [ErrDuplicateRegistration] or [ErrInvalidKey]): a programming error to
// fix, not a condition to branch on. The text of every error the package
// makes starts with "idempotency: ", once: one that wraps another of the
// package's errors quotes it without its prefix ("idempotency: forget:
// invalid key: event id is empty"), and a text of the caller's own code,
// pgx's or stripe-go's is quoted as it is. A registration's refusal then
// names the function that refused it, and for NewAction and NewTask the
// name being registered ("idempotency: NewTask \"send-receipt\": nil
// func", "idempotency: OnCurrent: already registered: ..."), a
// duplicate registration included.
package idempotency

import (
	"encoding/json"
	"time"
)

// Event is a verified Stripe event whose data.object has been decoded into
// T. T may be a stripe-go type such as *stripe.Invoice or a struct of the
// user's own holding only the fields the handler reads. A thin (v2) event's
// fields are those of the event fetched for its notification (see
// [Handler]).
type Event[T any] struct {
	ID         string    // the event id, evt_...
	Type       string    // the event type, e.g. invoice.paid
	Created    time.Time // when Stripe created the event (one-second resolution)
	Livemode   bool      // false for test-mode events
	APIVersion string    // the API version data.object is rendered in; empty for a thin event
	Account    string    // the connected account (Stripe Connect), a thin event's context; empty otherwise
	Object     T         // data.object, decoded; a thin event's data
	// Previous is data.previous_attributes as sent (for *.updated events),
	// a thin event's changes; nil when absent.
	Previous json.RawMessage
	// Raw is the verified request body, or a thin event's event fetched
	// for its notification. It stays valid after the handler returns.
	Raw json.RawMessage
	// ObjectID is the id of the object the event is about: data.object.id,
	// or a thin event's related_object.id. With Account, it is what the
	// inbox orders events by; it is what OnCurrent fetches.
	ObjectID string
}

// Outcome is what became of one delivery. It is the value of the "outcome"
// field of the handler's 2xx answers.
type Outcome string

// The outcomes. The first five are answered 200, so Stripe stops sending;
// the others are answered with an error status, so Stripe sends again later.
const (
	// OutcomeProcessed: the handler ran and its writes committed with the claim.
	OutcomeProcessed Outcome = "processed"
	// OutcomeDuplicate: the event had been processed or skipped before, or by
	// a concurrent delivery, or its claim was recorded ignored
	// (Config.RecordIgnored), also if a handler for its type was added
	// since; nothing ran.
	OutcomeDuplicate Outcome = "duplicate"
	// OutcomeIgnored: no handler is registered for the event type.
	OutcomeIgnored Outcome = "ignored"
	// OutcomeSkipped: the handler returned [Skip]; the claim is kept with the
	// reason so that the event is never retried, the handler's writes are not.
	OutcomeSkipped Outcome = "skipped"
	// OutcomeQueued: the event was stored in the [Inbox]; a worker will
	// apply it. Also the outcome of an inbox attempt at a task that
	// returned [Snooze]: pending again (Result.State), not counted.
	OutcomeQueued Outcome = "queued"
	// OutcomeFailed: the handler returned an error, panicked or ran out of
	// time, or the Stripe API failed the fetch of a thin event's event or
	// of an [OnCurrent] event's object; nothing was written. Answered 500;
	// 503 when that fetch met the API unreachable, rate-limited or failing
	// (5xx), or its answer cut short, or an OnCurrent fetch ran past
	// [FetchTimeout], as [Handler] lists.
	OutcomeFailed Outcome = "failed"
	// OutcomeUnavailable: the store could not be reached; nothing was
	// written, but when a COMMIT's answer was lost and the store could not
	// find out whether it went through (see [Store]), or an
	// [Inbox.Handler]'s insert was still on its way as Config.Timeout ran
	// out: Stripe's retry is then answered duplicate if it did. Answered
	// 503.
	OutcomeUnavailable Outcome = "unavailable"
	// OutcomeRejected: the request was refused before anything was stored
	// (wrong method, body too large, bad signature, malformed or unsupported
	// event). Answered 4xx.
	OutcomeRejected Outcome = "rejected"
)
