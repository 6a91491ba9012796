// Package idempotency makes every Stripe webhook change a Go service's data
// exactly once, however often, however concurrently and in whatever order
// Stripe delivers it.
//
// Mount a [Handler] on the webhook route, register one typed func per event
// type with [On], and give it a [Store] ([NewMemoryStore] for tests,
// [NewPgxStore] for production). For every verified delivery the handler
// claims the event id and runs the registered func in one transaction: the
// claim and every business write commit together or not at all, so a crash,
// an error or a panic leaves nothing behind and Stripe's retry processes the
// event normally, while a repeated delivery is answered 200 without running
// anything.
//
// Event ids do not catch everything: Stripe may send two events for one
// change (invoice.paid and invoice.payment_succeeded for one invoice). Inside
// a handler, [Tx.Guard] claims a business key such as the invoice id in the
// same transaction, and an [Action] ties a side effect to one such key
// whichever event triggers it.
package idempotency

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// Event is a verified Stripe event whose data.object has been decoded into
// T. T may be a stripe-go type such as *stripe.Invoice or a struct of the
// user's own holding only the fields the handler reads.
type Event[T any] struct {
	ID         string    // the event id, evt_...
	Type       string    // the event type, e.g. invoice.paid
	Created    time.Time // when Stripe created the event (one-second resolution)
	Livemode   bool      // false for test-mode events
	APIVersion string    // the API version data.object is rendered in
	Account    string    // the connected account (Stripe Connect); empty otherwise
	Object     T         // data.object, decoded
	// Previous is data.previous_attributes as sent (for *.updated events);
	// nil when absent.
	Previous json.RawMessage
	// Raw is the verified request body. It stays valid after the handler
	// returns.
	Raw json.RawMessage
}

// Outcome is what became of one delivery. It is the value of the "outcome"
// field of the handler's 2xx answers.
type Outcome string

// The outcomes. The first four are answered 200, so Stripe stops sending;
// the others are answered with an error status, so Stripe sends again later.
const (
	// OutcomeProcessed: the handler ran and its writes committed with the claim.
	OutcomeProcessed Outcome = "processed"
	// OutcomeDuplicate: the event had been processed or skipped before, or by
	// a concurrent delivery; nothing ran.
	OutcomeDuplicate Outcome = "duplicate"
	// OutcomeIgnored: no handler is registered for the event type.
	OutcomeIgnored Outcome = "ignored"
	// OutcomeSkipped: the handler returned [Skip]; the claim is kept with the
	// reason so that the event is never retried, the handler's writes are not.
	OutcomeSkipped Outcome = "skipped"
	// OutcomeFailed: the handler returned an error, panicked or ran out of
	// time; nothing was written. Answered 500.
	OutcomeFailed Outcome = "failed"
	// OutcomeUnavailable: the store could not be reached; nothing was
	// written. Answered 503.
	OutcomeUnavailable Outcome = "unavailable"
	// OutcomeRejected: the request was refused before anything was stored
	// (wrong method, body too large, bad signature, malformed or unsupported
	// event). Answered 4xx.
	OutcomeRejected Outcome = "rejected"
)

// Errors reported by the handler (through [Result]), the registry and the
// stores. They are compared with [errors.Is]; the stores translate their
// backend's errors to them.
var (
	// ErrNotSigned: the request has no Stripe-Signature header.
	ErrNotSigned = errors.New("idempotency: no Stripe-Signature header")
	// ErrInvalidSignature: the Stripe-Signature header is malformed, or no
	// v1 signature in it matches any configured secret.
	ErrInvalidSignature = errors.New("idempotency: invalid Stripe-Signature")
	// ErrTimestampOutsideTolerance: the signature's timestamp is further than
	// Config.Tolerance in the past or in the future.
	ErrTimestampOutsideTolerance = errors.New("idempotency: signature timestamp outside tolerance")
	// ErrBodyTooLarge: the body exceeds Config.MaxBodyBytes.
	ErrBodyTooLarge = errors.New("idempotency: request body too large")
	// ErrMalformedEvent: the verified body is not a Stripe event.
	ErrMalformedEvent = errors.New("idempotency: malformed event")
	// ErrThinEvent: the body is a thin (v2) event notification, which carries
	// no snapshot of the object. Configure the endpoint to send snapshot
	// events.
	ErrThinEvent = errors.New("idempotency: thin event notifications are not supported; configure the Stripe endpoint to send snapshot events")
	// ErrAPIVersionMismatch: the event's API version belongs to another
	// release train than stripe-go's, and Config.StrictAPIVersion is set.
	ErrAPIVersionMismatch = errors.New("idempotency: event API version differs from stripe-go's")
	// ErrTimeout: the handler did not finish within Config.Timeout.
	ErrTimeout = errors.New("idempotency: handler timed out")
	// ErrStoreUnavailable: the store could not be reached (connection
	// refused, lost, or the database is shutting down).
	ErrStoreUnavailable = errors.New("idempotency: store unavailable")
	// ErrTxDone: a [Tx] was used after its transaction ended, e.g. from a
	// goroutine that outlived the handler.
	ErrTxDone = errors.New("idempotency: transaction already ended")
	// ErrNotOwner: an [Action] was called from an event type it does not
	// name as an owner. It is a programming error; a unit test that delivers
	// each event type finds it.
	ErrNotOwner = errors.New("idempotency: event type does not own this action")
	// ErrDuplicateRegistration: an event type already has a handler, or an
	// action name is already taken.
	ErrDuplicateRegistration = errors.New("idempotency: already registered")
)

// SkipError is the error [Skip] returns.
type SkipError struct {
	Reason string
}

func (e *SkipError) Error() string { return "idempotency: skipped: " + e.Reason }

// Skip tells the handler that the event can never be processed, for example
// a Checkout Session created by a Payment Link without the metadata the
// service needs. Returned from a handler (wrapped or not), it rolls back the
// handler's writes, keeps the event's claim with the reason, and answers 200
// {"outcome":"skipped"} so that Stripe does not retry. The reason is stored
// and logged: keep payload data out of it.
func Skip(reason string) error {
	return &SkipError{Reason: reason}
}

// PanicError is the error a handler's panic is turned into. The transaction
// is rolled back and the delivery answered 500.
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the goroutine's stack at the panic
}

func newPanicError(v any) *PanicError {
	return &PanicError{Value: v, Stack: debug.Stack()}
}

func (e *PanicError) Error() string { return fmt.Sprintf("idempotency: handler panicked: %v", e.Value) }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
