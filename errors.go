package idempotency

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Which errors the package returns, and which to branch on: see the
// package doc's Errors section.
//
// The contract of errors next to an [Outcome]: a non-nil error from
// [Store.Run] always means the event was not applied (nothing it wrote
// committed), and [Result.Err] is set only for deliveries answered with an
// error status. What goes wrong after a commit (a panicking AfterCommit
// func) is reported beside the outcome, never as an error.

// errPrefix starts the text of every error the package returns, once.
const errPrefix = "idempotency: "

// errorf makes every error of the package other than the sentinels below:
// it is fmt.Errorf(errPrefix+format, args...), except that an operand that
// is one of the package's own errors (ownError) is written without its
// leading errPrefix, so that an error wrapping another of the package's
// reads "idempotency: forget: invalid key: ...", never with the prefix
// twice. What it returns unwraps as fmt.Errorf's error would: errors.Is,
// errors.As and errors.Unwrap find the operands of %w themselves. An error
// that is not the package's (a handler's, pgx's, stripe-go's) is quoted as
// it is, whatever its text. An error operand is written as its text: give
// it to %w or %v, never %T (pass fmt.Sprintf("%T", err) to %s). New code
// makes its errors with errorf, never with fmt.Errorf or errors.New and
// the prefix, so that ownError knows them when they are wrapped in turn;
// a new sentinel goes in sentinels (TestErrorsMadeByErrorf checks both).
func errorf(format string, args ...any) error {
	wrapped := fmt.Errorf(format, args...)
	shown := slices.Clone(args)
	for i, a := range args {
		if err, ok := a.(error); ok {
			shown[i] = quotedText(err)
		}
	}
	text := errPrefix + fmt.Sprintf(strings.ReplaceAll(format, "%w", "%v"), shown...)
	if multi, ok := wrapped.(interface{ Unwrap() []error }); ok {
		return &packageErrors{text: text, errs: multi.Unwrap()}
	}
	return &packageError{text: text, err: errors.Unwrap(wrapped)}
}

// packageError is an error made by errorf with at most one %w.
type packageError struct {
	text string
	err  error
}

func (e *packageError) Error() string { return e.text }
func (e *packageError) Unwrap() error { return e.err }

// packageErrors is an error made by errorf with more than one %w.
type packageErrors struct {
	text string
	errs []error
}

func (e *packageErrors) Error() string   { return e.text }
func (e *packageErrors) Unwrap() []error { return e.errs }

// ownText is err's text without its leading errPrefix, and true, when err
// is one of the package's own errors: what an error quoting it writes
// after a prefix of its own.
func ownText(err error) (text string, own bool) {
	if !ownError(err) {
		return "", false
	}
	// A typed nil of the package's error types, returned by a handler,
	// panics in Error: given to fmt as it is, it is printed "<nil>".
	defer func() {
		if recover() != nil {
			text, own = "", false
		}
	}()
	return strings.TrimPrefix(err.Error(), errPrefix), true
}

// quotedText is err's text as an error of the package quotes it: without
// its leading errPrefix when err is one of the package's own.
func quotedText(err error) string {
	if text, own := ownText(err); own {
		return text
	}
	return maskedText(err)
}

// ownError reports whether err, not what it wraps, was made by the
// package: a sentinel, an error of errorf or one of the package's error
// types.
func ownError(err error) bool {
	switch err.(type) {
	case *packageError, *packageErrors, *SkipError, *PanicError, *DecodeError,
		*PermanentError, *SnoozeError, *deadlockError, *stripeAPIError, *CheckpointMismatchError,
		*fetchUnavailableError:
		return true
	}
	return slices.Contains(sentinels, err)
}

// sentinels are the package's errors made by errors.New.
var sentinels = []error{
	ErrNotSigned, ErrInvalidSignature, ErrTimestampOutsideTolerance,
	ErrBodyTooLarge, ErrMalformedEvent, ErrThinEvent, ErrAPIVersionMismatch, ErrModeMismatch,
	ErrMethodNotAllowed, ErrUnreadableBody,
	ErrTimeout, ErrStoreUnavailable, ErrDeadlock, ErrInvalidKey, ErrTxDone,
	ErrTxBusy, ErrLeaseExpired, ErrLeaseLost, ErrTaskNotRegistered,
	ErrTxOwnedByStore, ErrNotOwner, ErrNoHandler, errTxAborted,
	ErrDuplicateRegistration, ErrNeedsStoreTx, ErrObjectNotFound,
	ErrStripeAPI, ErrRecoveryWindow, ErrCheckpointMismatch,
	ErrPruneRunning, ErrUnfinished, ErrForgetTask, ErrShutdownTimeout,
	errNotifyNeedsPool, errNotifyPoolOfOne,
}

// Rejections before anything is stored: [Handler] answers them 4xx and
// reports them in [Result.Err].
var (
	// ErrNotSigned: the request has no Stripe-Signature header. Answered 400.
	ErrNotSigned = errors.New("idempotency: no Stripe-Signature header")
	// ErrInvalidSignature: the Stripe-Signature header is malformed, or no
	// v1 signature in it matches any of Config.Secrets; the error wrapping
	// it says so, and whether the body was empty (a middleware before the
	// Handler read it), never quoting the body. Answered 400.
	ErrInvalidSignature = errors.New("idempotency: invalid Stripe-Signature")
	// ErrTimestampOutsideTolerance: the signature's timestamp is further
	// than Config.Tolerance in the past or in the future. Answered 400.
	ErrTimestampOutsideTolerance = errors.New("idempotency: signature timestamp outside tolerance")
	// ErrBodyTooLarge: the body exceeds Config.MaxBodyBytes, or a smaller
	// limit that a middleware before the Handler set on it
	// (http.MaxBytesReader), which the error wrapping it names. Answered
	// 413.
	ErrBodyTooLarge = errors.New("idempotency: request body too large")
	// ErrMalformedEvent: the verified body is not a Stripe event, or its id,
	// type, object id, account or API version is text no store can keep (a
	// NUL byte, invalid UTF-8 or an unpaired surrogate escape; an id or
	// object id over 1024 bytes), or its created is not a time between the
	// years 1 and 9999. Answered 400.
	ErrMalformedEvent = errors.New("idempotency: malformed event")
	// ErrThinEvent: the body is a thin (v2) event notification, which
	// carries no snapshot of the object, and Config.StripeClient is not set
	// to fetch the event. Answered 400; set Config.StripeClient, or
	// configure the endpoint to send snapshot events.
	ErrThinEvent = errors.New("idempotency: thin event notification and no Config.StripeClient to fetch the event; set one, or configure the Stripe endpoint to send snapshot events")
	// ErrAPIVersionMismatch: the event's API version belongs to another
	// release train than Config.APIVersion, and Config.StrictAPIVersion is
	// set. Answered 400.
	ErrAPIVersionMismatch = errors.New("idempotency: event API version differs from Config.APIVersion")
	// ErrModeMismatch: the event is of another mode (its livemode) than
	// Config.Mode: a test-mode event at a live endpoint, or the reverse.
	// Answered 400. [Handler.Recover] stops with it at the first listed
	// event of the other mode, and refuses with it, before any request, a
	// client whose API key is of the other mode; NewHandler and
	// Inbox.Handler refuse with it a Config.StripeClient whose key is.
	ErrModeMismatch = errors.New("idempotency: event of another mode than Config.Mode")
	// ErrMethodNotAllowed: a method other than POST. Answered 405.
	ErrMethodNotAllowed = errors.New("idempotency: method not allowed")
	// ErrUnreadableBody: the body could not be read in full (it ended
	// before its Content-Length: the sender hung up, or the http.Server's
	// ReadTimeout cut it off, or a middleware before the Handler read or
	// closed it, which the error wrapping it points at). It wraps the
	// read's error too. Answered 400.
	ErrUnreadableBody = errors.New("idempotency: request body unreadable")
)

// Failures of a delivery, an inbox attempt or a [Store.Run]: the event's
// transaction was rolled back, and nothing was written unless said below
// (a task's func may have run).
var (
	// ErrTimeout: the claim and the handler did not finish within
	// Config.Timeout (an inbox attempt's, InboxConfig.Timeout); the
	// transaction was rolled back. Answered 500. An [Inbox.Handler] whose
	// insert of the event did not finish within it answers 503 with it, as
	// for any event it could not store (the insert may have committed all
	// the same: Stripe's retry is then a duplicate). A [TaskFunc] that
	// returns an error once InboxConfig.Timeout has run out fails its
	// attempt with it, wrapping that error; one that returns nil, its
	// effect done, is processed. The error
	// that wraps it names what timed out (the handler's transaction, the
	// insert, or the task) and the setting that bounds it (Config.Timeout,
	// InboxConfig.Timeout); and a PgxStore's, when its claim or insert
	// waited for a connection of its pool, every one in use, says so, as
	// does a handler's error that did so (a *sql.DB on the pool).
	ErrTimeout = errors.New("idempotency: timed out")
	// ErrStoreUnavailable: the store could not be reached (connection
	// refused or lost, the database shutting down or starting, a
	// PgxStore's pgxpool closed), or cannot store (PostgreSQL
	// read-only: a standby, or default_transaction_read_only on).
	// Returned by [Store.Run] with [OutcomeUnavailable], and by Migrate;
	// by Ping and the lookups, which only read, when the database cannot
	// be reached (a read-only one passes them). Answered 503. Nothing was written, but
	// when Run's COMMIT was sent and its answer lost, and the store could
	// not find out whether it committed: then it may have (see [Store]).
	ErrStoreUnavailable = errors.New("idempotency: store unavailable")
	// ErrDeadlock: a [MemoryStore] Guard would have waited for a
	// transaction that waits, directly or not, for the caller's. The store
	// reruns the transaction, as [PgxStore] reruns PostgreSQL's deadlocks;
	// Run returns it only when the last of its attempts fails so.
	ErrDeadlock = errors.New("idempotency: deadlock between concurrent transactions")
	// ErrInvalidKey: a [Tx.Guard] scope or key, or a [Claim]'s event id,
	// type, object id, account or guard, is text a store cannot keep: empty
	// where a value is required, a NUL byte (PostgreSQL's text refuses it),
	// invalid UTF-8, or, for an event id, type and object id and a guard's
	// scope and key, more than 1024 bytes (PostgreSQL's indexes refuse a
	// longer key); or a Claim's ReceivedAt, [CheckOrder]'s created or the
	// time of an inbox's clock (InboxConfig.Now) or of a prune's
	// (Retention.Now) is not the zero time nor a time between the years 1
	// and 9999. Both stores refuse the same input, so the memory store
	// never accepts what PostgreSQL would fail on every retry, or store as
	// another time.
	ErrInvalidKey = errors.New("idempotency: invalid key")
	// ErrTxDone: a [Tx] was used after its transaction ended, e.g. from a
	// goroutine that outlived the handler.
	ErrTxDone = errors.New("idempotency: transaction already ended: a Tx is its handler's and ends when the handler returns")
	// ErrTxBusy: a statement of a [Tx] was started while another of the
	// same transaction was running, from another goroutine, or while the
	// rows of an earlier query (through [PgxTx]) were still open. A
	// transaction runs one statement at a time, on PostgreSQL's one
	// connection, and both stores refuse the overlap alike. An attempt
	// whose handler returned with a statement still running or rows still
	// open fails with it, rolled back.
	ErrTxBusy = errors.New("idempotency: another statement of the transaction is running")
	// ErrLeaseExpired is the error of an inbox attempt whose lease ran out
	// with its end not recorded: its worker died, hung or lost its
	// connection, or a replica with a clock ahead of its worker's found
	// the lease expired early. The lease that finds it so reports that
	// attempt, failed, with this error (Result.Err, to
	// InboxConfig.OnResult and the Observer): the attempt that takes the
	// event (or the task) over, as it starts (State failed), or, at the
	// last attempt, the lease that dead-letters it (State dead_letter).
	// The end its worker gives, if it comes back, wraps it too, with no
	// State: logged and given to the Observer's done, not to OnResult.
	// Those errors wrap it in the words of the event's last error, "lease
	// expired after attempt N: its worker died, ..." (then, for the
	// worker that came back, what its attempt ended with).
	ErrLeaseExpired = errors.New("idempotency: lease expired: its worker died, hung or lost its connection, or the clocks of the replicas disagree")
	// ErrLeaseLost is the error of an inbox attempt whose lease a newer
	// attempt took over before it ended (its worker hung, or lost its
	// connection, past the lease), or, for an event, whose lease ended
	// before its transaction began (its worker was delayed past it: a slow
	// OnResult or Observer, a wait for a pooled connection), which the
	// next lease takes over: its end is not recorded, the newer attempt's
	// is. An event's transaction was rolled back; a task's func
	// had returned, and the task is the newer attempt's to run (with the
	// same idempotency key). Its end is a failed attempt with no State,
	// whatever the handler or the func returned (its error wrapped too),
	// whose error wraps [ErrLeaseExpired] too: the lease that took it over
	// reports it to InboxConfig.OnResult, and the worker's end is logged
	// and given to the Observer's done only. Reported to OnResult with this
	// error alone only when the event was redriven or forgotten while the
	// attempt's own lease ran, which no lease can then have reported.
	ErrLeaseLost = errors.New("idempotency: inbox lease lost to a newer attempt")
	// ErrTaskNotRegistered is the error of an inbox attempt at a task
	// whose name no [NewTask] registered in the worker's process (a
	// deployment that removed it, or one not yet rolled out): the attempt
	// fails and the task is retried with backoff, so that a process that
	// registers it runs it; at InboxConfig.MaxAttempts it is
	// dead-lettered, as after any failed attempt, for a redrive. It is
	// also [Task.Enqueue]'s, storing nothing, in an event whose Handler or
	// Inbox was built on a Handlers that registers no task of its name.
	ErrTaskNotRegistered = errors.New("idempotency: no task registered")
	// ErrNoHandler is the error of an inbox attempt at an event whose
	// type has no handler in the worker's process, while the event is
	// younger than InboxConfig.RetryUnhandledFor: a process that had the
	// handler stored it (a deployment not yet rolled out everywhere), and
	// it is retried with backoff, so that one that has it applies it.
	// Past that, the worker records the event ignored, its
	// InboxRecord.LastError saying why in the same words.
	ErrNoHandler = errors.New("idempotency: no handler for the event's type in this process")
	// ErrTxOwnedByStore: returned by Commit and Rollback of the transaction
	// [PgxTx] hands to a handler. Committing early would separate the claim
	// from the writes that follow; return an error from the handler to roll
	// back.
	ErrTxOwnedByStore = errors.New("idempotency: the event's transaction is committed or rolled back by the store when the handler returns")
	// ErrNotOwner: an [Action] was called from an event type it does not
	// name as an owner. It is a programming error; a unit test that delivers
	// each event type finds it.
	ErrNotOwner = errors.New("idempotency: event type does not own this action")
	// errTxAborted: a [MemoryStore] Guard after a failed one, as PostgreSQL
	// refuses statements in a transaction that had an error.
	errTxAborted = errors.New("idempotency: transaction aborted by an earlier error; the handler must return")
)

// Programming errors, returned by the constructors and the registry.
var (
	// ErrDuplicateRegistration: an event type already has a handler (or
	// is of a kind of object another [OnCurrent] call has), or an action
	// or task name is already taken. [On], [OnCurrent], [NewAction] and
	// [NewTask] panic with it; [OnSafely], [OnCurrentSafely],
	// [NewActionSafely] and [NewTaskSafely] return it.
	ErrDuplicateRegistration = errors.New("idempotency: already registered")
)

// Stopping an [Inbox].
var (
	// ErrShutdownTimeout is returned by [Inbox.Run] when attempts were
	// still in flight once InboxConfig.ShutdownTimeout had passed after its
	// context was done, and it cancelled them: each rolled back and was
	// recorded failed, to be retried after the backoff (dead-lettered at
	// its last attempt). The error that wraps it says how many, as
	// http.Server.Shutdown returns its context's error when its deadline
	// cut connections. It counts the attempts the cut left unapplied: not
	// one that ended before the deadline, however close to it, nor one
	// whose event was applied and that was still running its AfterCommit
	// funcs then, nor one that had applied its event or failed on its own
	// and was being reported (logged, OnResult, the Observer) then.
	ErrShutdownTimeout = errors.New("idempotency: attempts still in flight at InboxConfig.ShutdownTimeout cancelled")
)

// SkipError is the error [Skip] returns. [Store.Run] reports it as
// [OutcomeSkipped] with a nil error. An empty Reason is kept and read as
// "no reason given", as Skip("") makes it.
type SkipError struct {
	Reason string
}

// Error is "idempotency: skipped: " and the reason ("no reason given"
// when it is empty).
func (e *SkipError) Error() string { return "idempotency: skipped: " + given(e.Reason) }

// noReasonGiven is the reason of a Skip or a Permanent given none: an empty
// one, in a log line or a LastError, would read as a bug.
const noReasonGiven = "no reason given"

// maxKeptTextLen bounds the free text a store keeps of an attempt or a
// handler: InboxRecord.LastError, EventRecord.SkipReason.
const maxKeptTextLen = 1000

// given is reason, or noReasonGiven when it is empty.
func given(reason string) string {
	if reason == "" {
		return noReasonGiven
	}
	return reason
}

// Skip tells the handler that the event can never be processed, for example
// a Checkout Session created by a Payment Link without the metadata the
// service needs. Returned from a handler (wrapped or not), it rolls back the
// handler's writes, keeps the event's claim with the reason, and answers 200
// {"outcome":"skipped"} so that Stripe does not retry. The reason is stored
// and logged: keep payload data out of it. A NUL byte or invalid UTF-8 in
// it is replaced, so that both stores keep it alike, and its first 1000
// bytes are kept, as of a task's error (InboxRecord.LastError). An empty
// reason is kept as "no reason given", as [Permanent](nil) says.
func Skip(reason string) error {
	return &SkipError{Reason: given(reason)}
}

// skipReason reports whether err is or wraps a SkipError, and its reason
// as a store keeps it (keptText): the ledger, the log and
// Result.SkipReason take it from here alike. A panic is never a skip,
// whatever its value wraps.
func skipReason(err error) (string, bool) {
	var s *SkipError
	if errors.As(err, &s) && !panicked(err) {
		return keptText(given(s.Reason)), true
	}
	return "", false
}

// panicked reports whether err is or wraps a PanicError. A handler or a
// task that panics has failed, even when the panic's value wraps an error
// that, returned, would mean otherwise (Skip, Permanent, Snooze): a bug
// that panics must not drop an event for good.
func panicked(err error) bool {
	var p *PanicError
	return errors.As(err, &p)
}

func skipped(err error) bool {
	_, ok := skipReason(err)
	return ok
}

// storableText replaces what PostgreSQL's text cannot hold.
func storableText(s string) string {
	if validText(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// keptText is s as a store keeps a reason or an error: storable text, cut
// at maxKeptTextLen bytes, a rune cut in half there dropped.
func keptText(s string) string {
	s = storableText(s)
	if len(s) > maxKeptTextLen {
		s = strings.ToValidUTF8(s[:maxKeptTextLen], "")
	}
	return s
}

// validText reports whether s can be stored as PostgreSQL text.
func validText(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// PanicError is the error a handler's panic is turned into by the
// [Handler] and the [Inbox]: the transaction is rolled back, the
// [Store.Run] they call returns it with [OutcomeFailed], and the delivery
// is answered 500 (in the inbox, a failed attempt), even when the panic's
// value wraps a [Skip], [Permanent] or [Snooze] error, which only count
// when returned. Store.Run itself does not recover: called with an apply
// that panics, it rolls back and the panic goes on up to its caller. A
// panicking AfterCommit func is reported as a PanicError too, in
// [Result.AfterCommitPanics], never as an error; so is a panicking
// [TaskFunc], a failed attempt of its task. A panic in the code of a
// [PgxStore]'s connections (a pgx tracer, a pool's hook) during the
// insert that stores an [Inbox]'s deliveries is one too: each delivery
// of that insert (one, or several that arrived together) is answered 503
// with it, nothing stored; during an inbox worker's lease, or the
// recording of an attempt's end, it is that call's error, as it is in
// [Inbox.Run]'s clock check, listen connection and notifications of
// other processes; and during an
// attempt's transaction, the attempt's error, the attempt failed and
// retried as any other.
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the goroutine's stack at the panic

	task string // the task whose func panicked; "" for a handler
	// what says what panicked, when neither a handler nor a task: Error
	// writes it whole, before the value.
	what string
}

func newPanicError(v any) *PanicError {
	return &PanicError{Value: v, Stack: debug.Stack()}
}

// Error quotes the panic's value when it is a string or an error, the
// handler's own message like a returned error's, and otherwise names only
// its type: a panic with the event, its object or a map from it would put
// the customer's details in every log line, Result.Err and stored
// LastError. Value keeps the value itself. A task's panic names the task:
// "idempotency: task <name> panicked: ...".
func (e *PanicError) Error() string {
	if e.task != "" {
		return "idempotency: task " + e.task + " panicked: " + panicText(e.Value)
	}
	if e.what != "" {
		return "idempotency: " + e.what + ": " + panicText(e.Value)
	}
	return "idempotency: handler panicked: " + panicText(e.Value)
}

// panicText describes a panic's value without formatting what could be
// payload data.
func panicText(v any) (text string) {
	switch v := v.(type) {
	case string:
		return v
	case error:
		// The value of a panic may be a typed nil error, or one whose Error
		// method panics: reporting it must not panic again (fmt, which
		// formatted it before, recovers the same way).
		defer func() {
			if recover() != nil {
				text = fmt.Sprintf("a value of type %T whose Error method panicked", v)
			}
		}()
		return quotedText(v)
	}
	return fmt.Sprintf("a value of type %T", v)
}

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// DecodeError reports that data.object (a thin event's data) did not decode
// into the handler's type: the event fails ([OutcomeFailed], answered 500),
// so Stripe sends it again once the code is fixed. Its message names what
// was decoded, the field and the types, never a value from the payload.
type DecodeError struct {
	EventType string // the event type
	Target    string // the handler's type, e.g. *stripe.Invoice
	Err       error  // the decoder's error; its text may quote the payload

	thin bool // of a thin event's data, which has no data.object
}

// Error names what was decoded, the event type, Target and the failing
// field and types, never a value from the payload.
func (e *DecodeError) Error() string {
	decoded := "data.object"
	if e.thin {
		decoded = "data"
	}
	return fmt.Sprintf("idempotency: decoding %s of %s event into %s: %s", decoded, e.EventType, e.Target, jsonErrorDetail(e.Err))
}

// Unwrap returns Err, the decoder's error.
func (e *DecodeError) Unwrap() error { return e.Err }

// objectKindError is the Err of a DecodeError for a data.object whose
// "object" is not the one the handler's stripe-go type is the type of.
type objectKindError struct {
	kind, target string
}

func (e *objectKindError) Error() string {
	if len(e.kind) > 64 || strings.ContainsFunc(e.kind, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' && r != '.'
	}) {
		// Not a Stripe object's name: not quoted.
		return fmt.Sprintf("data.object's object is not the one %s is the type of", e.target)
	}
	return fmt.Sprintf("data.object's object is %q: %s is another object's type", e.kind, e.target)
}

// jsonErrorDetail describes an error of encoding/json's decoder by the
// field and the types, or the offset, and never quotes a value: the
// decoder's own message does (a number that overflows its field), and so
// does the error of a type's own UnmarshalJSON (time.Time's quotes the
// text it could not parse), of which only the Go type is named.
func jsonErrorDetail(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	var kindErr *objectKindError
	switch {
	case errors.As(err, &kindErr):
		return kindErr.Error()
	case errors.As(err, &typeErr):
		detail := fmt.Sprintf("cannot decode a JSON %s into %s", jsonKind(typeErr.Value), typeErr.Type)
		if typeErr.Field == "" { // the whole value, which has no field's name
			return detail
		}
		return fmt.Sprintf("field %q: %s", typeErr.Field, detail)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("invalid JSON at offset %d", syntaxErr.Offset)
	}
	return fmt.Sprintf("a value was refused by its type's decoder (a %T, not quoted: its text may hold the value)", err)
}

// argsDecodeError reports that a task's stored arguments did not decode
// into its type. Its message, the task's LastError, names the task, the
// field and the types, never a value of the arguments.
type argsDecodeError struct {
	task string
	err  error // the decoder's error; its text may quote the arguments
}

func (e *argsDecodeError) Error() string {
	return fmt.Sprintf("decoding the arguments of task %s: %s", e.task, jsonErrorDetail(e.err))
}

func (e *argsDecodeError) Unwrap() error { return e.err }

// jsonKind keeps the kind of an UnmarshalTypeError's value ("number",
// "string") and drops the value itself.
func jsonKind(value string) string {
	kind, _, _ := strings.Cut(value, " ")
	return kind
}

// PermanentError is the error [Permanent] returns.
type PermanentError struct{ Err error }

// Error is "idempotency: permanent failure: " and Err's text, without
// its "idempotency: " when Err is one of the package's errors, and with
// a stripe-go error it wraps read by its status, type and code, not as
// the JSON of Stripe's answer.
func (e *PermanentError) Error() string { return errPrefix + "permanent failure: " + quotedText(e.Err) }

// Unwrap returns Err.
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent tells the inbox that a task can never succeed (the provider
// refused the request for good: an invalid address, an account closed):
// returned from a [TaskFunc], wrapped or not, it dead-letters the task at
// once instead of retrying it. [Inbox.Redrive] runs it again. Returned from
// an event handler it is an ordinary error: the Handler answers 500, the
// inbox retries the event with its backoff; [Skip] is what ends an event.
// A nil err is kept as "no reason given", as [Skip]'s empty reason is:
// the task is dead-lettered all the same.
func Permanent(err error) error {
	if err == nil {
		err = errors.New(noReasonGiven)
	}
	return &PermanentError{Err: err}
}

// SnoozeError is the error [Snooze] returns.
type SnoozeError struct{ After time.Duration }

// Error is "idempotency: snoozed for " and After.
func (e *SnoozeError) Error() string { return fmt.Sprintf("idempotency: snoozed for %s", e.After) }

// Snooze tells the inbox to run a task again after d (at least 0) without
// counting this attempt: for a provider that asked to come back later (a
// rate limit's Retry-After), or work that waits on something else. The task
// goes back to pending, due at the inbox's clock plus d, its LastError still
// the error of the attempt before (a snooze is not a success), if one
// failed: with 0, Run takes it again as soon as a worker is free, and
// [Inbox.WorkDue] runs it once per call. Returned from an event handler it
// is an ordinary error, as [Permanent] is: the attempt counts, and the event
// is due again after the backoff, not after d. The snooze is d exactly:
// tasks a provider's limit refused together come due together, and call
// it again together; add a jitter of your own to d to spread them.
func Snooze(d time.Duration) error {
	return &SnoozeError{After: max(d, 0)}
}

// ErrNeedsStoreTx: what keeps its state in the event's transaction
// ([Task.Enqueue], [CheckOrder], [OnCurrent]) was given a Tx that is not
// the transaction of a [MemoryStore] or [PgxStore] handler.
var ErrNeedsStoreTx = errors.New("idempotency: needs the Tx of a MemoryStore or PgxStore handler")

// ErrObjectNotFound: the object an [OnCurrent] handler fetched does not
// exist: the Stripe API answered 404 resource_missing ([Retrieve] returns
// it then), or a [FetchFunc] of the service's or of a test's found none. A
// FetchFunc wraps it, and the event is skipped.
var ErrObjectNotFound = errors.New("idempotency: object not found")

// Talking to the Stripe API: fetching a thin event's event, [Retrieve]'s
// fetches, and [Handler.Recover].
var (
	// ErrStripeAPI: a request to the Stripe API failed: the network, a
	// timeout, a rate limit (429), Stripe itself (5xx), a proxy or gateway
	// before it (a 502, 503 or 504 with an HTML page), an answer cut short,
	// or a refusal (an invalid key, an unknown event); or
	// [Handler.Recover] was answered a list it cannot go on from (an empty
	// page with more after it, an event of another account than
	// RecoverOptions.Account, JSON that is not a list). A failed request's
	// text has the HTTP status, Stripe's error type and code and the
	// request id, or says that the answer is not the Stripe API's; no text
	// has the key, a payload or a proxy's page. stripe-go's *stripe.Error
	// is reachable with errors.As.
	// A thin event whose fetch fails is answered 503 (network, timeout,
	// 429, 5xx, an answer cut short) or 500 (a refusal: a 4xx, Stripe's or
	// a proxy's; a request the client cannot make: a base URL that does
	// not parse, is not http(s) or has a path other than /v1; endless
	// redirects or one the client's own http.Client refuses, a
	// certificate not accepted), so Stripe sends it again; an
	// [OnCurrent] handler's fails its event; [Handler.Recover] asks again
	// after what a later request may pass, and stops with it, its
	// checkpoint kept.
	ErrStripeAPI = errors.New("idempotency: Stripe API request failed")
	// ErrRecoveryWindow: [Handler.Recover] was asked to start before
	// [RecoveryWindow] (30 days) ago, by RecoverOptions.Since or by the
	// last event of its checkpoint: the Events API no longer lists those
	// events, so they cannot be recovered. Nothing was requested or stored.
	ErrRecoveryWindow = errors.New("idempotency: recovery cannot reach back further than the Events API's 30 days")
	// ErrCheckpointMismatch: RecoverOptions.Checkpoint names a checkpoint
	// that was started with another Account, other Types or
	// OnlyUndelivered, or with a later Since than the options': continuing
	// it would not recover what the options ask for. Nothing was requested
	// or stored; use another checkpoint name. The error is a
	// [*CheckpointMismatchError], which holds the checkpoint's options and
	// names each that differs.
	ErrCheckpointMismatch = errors.New("idempotency: recovery checkpoint started with other options")
)

// Retention and Forget.
var (
	// ErrPruneRunning is returned by [PgxStore.Prune] when another prune, in
	// this process or another replica, is deleting a batch as this one starts.
	// Nothing was deleted; the other prune does the work.
	ErrPruneRunning = errors.New("idempotency: another prune is running")

	// ErrUnfinished is returned by Forget for an event that is still to be
	// applied in the inbox (pending, processing or failed): there is nothing
	// to forget yet.
	ErrUnfinished = errors.New("idempotency: the event is still to be applied")

	// ErrForgetTask is returned by Forget for a task's id: a task's row is
	// what makes enqueueing its key again do nothing, and deleting it would
	// let the task run a second time (a second email). Tasks are not
	// forgotten.
	ErrForgetTask = errors.New("idempotency: a task's id cannot be forgotten: enqueueing its key again would run it again")
)
