package idempotency

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/seed-a84bb619/idempotency/internal/decode"
	"github.com/seed-a84bb619/idempotency/internal/envelope"
	"github.com/seed-a84bb619/idempotency/internal/eventtypes"
)

// EventFunc handles the events of one type. It runs inside the transaction that
// claimed the event: its writes through tx (and through [PgxTx] on
// PostgreSQL) commit with the claim or not at all. Returning an error rolls
// everything back and fails the event: the [Handler] answers 500, so Stripe
// sends the event again, and an [Inbox] retries it after its backoff;
// returning [Skip] ends it for good (the Handler answers 200), never
// retried.
//
// ctx carries Config.Timeout (in an inbox, InboxConfig.Timeout) and is not
// cancelled when the sender hangs up; a handler must return when ctx is
// done. When the database fails the transaction for a deadlock or a
// serialization conflict, the store rolls it back and runs the handler
// again (up to 5 attempts): keep side effects out of it, in a [Task] for
// what must happen and in Tx.AfterCommit for what may be lost.
type EventFunc[T any] func(ctx context.Context, tx Tx, ev Event[T]) error

// Handlers is the registry of event handlers, actions and tasks. Build it
// at start-up with [On], [OnCurrent], [NewAction] and [NewTask], then pass
// it to [NewHandler] or [NewInbox], which take a snapshot: [On] and
// [OnCurrent] panic once either has taken one (their Safely forms return
// the error), since the snapshot would answer the new type's events
// ignored, 200, and Stripe would not send them again; NewTask panics once
// NewInbox has taken one. It is not safe for concurrent registration.
type Handlers struct {
	byType  map[string]registration
	actions []ActionInfo
	tasks   map[string]taskRegistration // by name; see task.go
	wakers  wakers
	// currentKinds are the kinds of object OnCurrent registered, each
	// with the first event type of that kind its call had; see current.go.
	currentKinds map[string]string
	// taken is the first function that took a snapshot of the handlers
	// (NewHandler, NewInbox), or nil: On and OnCurrent refuse once it is
	// set (see checkOn). Snapshots may be taken concurrently (parallel
	// tests sharing one Handlers), which only read hs otherwise.
	taken atomic.Pointer[string]
	// warned is set once warnUnknownTypes has logged: the types cannot
	// change after the first snapshot, and a service that builds a
	// Handler and an Inbox of one Handlers hears of them once.
	warned atomic.Bool
}

// take records that fn takes a snapshot of hs's handlers.
func (hs *Handlers) take(fn string) { hs.taken.CompareAndSwap(nil, &fn) }

// registration is one event type's handler, with T erased.
type registration struct {
	objectType string // T, for messages
	// apply decodes data.object, with the fast decoder when fast is set,
	// unless fetched, and runs the func.
	apply func(ctx context.Context, tx Tx, env *envelope.Envelope, raw []byte, fast bool) error
	// fetched marks OnCurrent's registrations: their func is given the
	// object fetched from the API, at the client's API version, never the
	// payload's data.object, so the payload's API version does not matter
	// and data.object is not decoded: a thin event's data may be any JSON
	// value.
	fetched bool
	// objectLock is set by the dispatcher (dispatchedHandlers) on an On
	// registration of a kind of object an OnCurrent call of the same
	// Handlers registered: that kind's scope (currentScope), whose lock
	// of the event's object the handler runs holding, as OnCurrent's
	// handlers of the kind do. Empty otherwise: no lock.
	objectLock string
}

// NewHandlers returns an empty registry. The zero value is an empty
// registry too.
func NewHandlers() *Handlers {
	return &Handlers{byType: make(map[string]registration)}
}

// On registers fn for eventType. data.object is decoded into T only after
// the event is claimed, so a duplicate costs no decode. T is a stripe-go
// type such as *stripe.Invoice, or a struct of the fields fn needs. A
// stripe-go resource type must be that of data.object's "object", rather
// than decode the fields the two share and leave the others zero: On
// refuses one that is none of the objects eventType's events carry, as
// stripe-mock's specification of Stripe's events gives them
// (*stripe.Customer for invoice.paid), and an event of a type that
// specification does not describe whose object is another fails with a
// [DecodeError] that names it. A thin event's data is decoded
// into T: stripe.V1BillingMeterErrorReportTriggeredEventData, the Data of
// stripe-go's type of the event. The
// value is json.Unmarshal's, with one difference: a T with its own
// UnmarshalJSON is given data.object without insignificant white space
// (stripe-go's decode the compact form faster); one that keeps its input
// keeps those bytes, not Stripe's indented ones, which Event.Raw has.
//
// An event type of a kind of object that an [OnCurrent] call of hs
// registers (product.deleted beside product.updated: the type less its
// last segment) runs fn holding the event's object's lock, which
// OnCurrent's handlers of the kind take, until its transaction ends: see
// OnCurrent. The handlers of other types take no lock.
//
// On panics on a programming error: an empty event type, one with a NUL
// byte or invalid UTF-8 ([ErrInvalidKey]) or with white space or a control
// character (no Stripe event has such a type), a wildcard such as
// "invoice.*" (handlers are looked up by the event's exact type: register
// each one), a nil fn, a second handler for one event type, or a T that is
// a whole event's type (*stripe.Event, stripe-go's type of a thin event,
// such as stripe.V1BillingMeterErrorReportTriggeredEvent, or the
// stripe.V2BaseEvent it embeds), never given the data it would decode, a
// stripe-go type of another object than eventType's events carry, which
// would fail to decode them or decode them wrong, or a registration after
// [NewHandler] or [NewInbox] took its snapshot of hs, which would answer
// the type's events ignored.
// [OnSafely] returns the error instead. A type stripe-go v82.5.1 does not
// know is registered (Stripe may have added it since), and the first
// [NewHandler] or [NewInbox] built from hs logs it: at Warn, with the
// known types it is likely a misspelling of, when some are one or two
// letters away; at Info otherwise.
func On[T any](hs *Handlers, eventType string, fn EventFunc[T]) {
	if err := OnSafely(hs, eventType, fn); err != nil {
		panic(err)
	}
}

// OnSafely is [On] returning the error instead of panicking; the error wraps
// [ErrDuplicateRegistration] when eventType already has a handler, and
// [ErrInvalidKey] when it has a NUL byte or invalid UTF-8.
func OnSafely[T any](hs *Handlers, eventType string, fn EventFunc[T]) error {
	var zero T
	return onSafely(hs, eventType, fmt.Sprintf("%T", zero), false, fn)
}

// notAnEventType reports whether t has text no Stripe event's type has:
// white space or a control character ("invoice.paid\n" read from an env
// file).
func notAnEventType(t string) bool {
	return strings.ContainsFunc(t, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) })
}

// wildcardEventType reports whether t is a wildcard ("*", "invoice.*"), as
// a Stripe endpoint's enabled events take it: no event's type has a '*',
// so it matches none.
func wildcardEventType(t string) bool {
	return strings.Contains(t, "*")
}

// checkEventType refuses a non-empty eventType that no delivered event's
// type can equal, so that what is registered for it could never run: text
// no store keeps (the Handler refuses every event whose type is such
// text), white space or a control character ("invoice.paid\n" read from
// an env file), or a wildcard (handlers and owners are matched by the
// delivered event's exact type). Every event of the type meant would be
// answered 200 ignored, and lost, or fail for good.
func checkEventType(eventType string) error {
	if err := checkText("event type", eventType, true); err != nil {
		return err
	}
	if notAnEventType(eventType) {
		return errorf("event type %q has white space or a control character; no Stripe event has such a type", eventType)
	}
	if wildcardEventType(eventType) {
		return errorf("event type %q is a wildcard, which no delivered event's type matches; register each exact event type", eventType)
	}
	return nil
}

// onSafely is OnSafely with the name its registration gives in messages
// (T's, or what an OnCurrent call was for, whose registration decodes into
// another type than its handler's) and the registration's fetched mark.
// checkOn returns why a handler of eventType, for name, cannot be
// registered in hs, or nil: what onSafely refuses but a nil func. Its
// error starts with op, the function that registers (On, OnCurrent), as
// each of that function's refusals does.
func checkOn(hs *Handlers, op, eventType, name string) error {
	switch {
	case hs == nil:
		return errorf("%s: nil *Handlers", op)
	case eventType == "":
		return errorf("%s: empty event type", op)
	}
	if err := checkEventType(eventType); err != nil {
		return errorf("%s: %w", op, err)
	}
	if prev, ok := hs.byType[eventType]; ok {
		return errorf("%s: %w: event type %q has a handler for %s; a second one (for %s) would make the outcome depend on registration order",
			op, ErrDuplicateRegistration, eventType, prev.objectType, name)
	}
	if taken := hs.taken.Load(); taken != nil {
		// The snapshot would answer the type's events ignored, 200: Stripe
		// would not send them again.
		return errorf("%s: event type %q registered after %s took its snapshot of the Handlers, which answers the type's events ignored: register every handler before %s",
			op, eventType, *taken, *taken)
	}
	return nil
}

func onSafely[T any](hs *Handlers, eventType, name string, fetched bool, fn EventFunc[T]) error {
	var zero T
	objectType := fmt.Sprintf("%T", zero)
	fastDecode, plainDecode := decode.For[T]()
	t := reflect.TypeFor[T]()
	stripeObject := decode.StripeObject(t)
	if fn == nil && hs != nil && eventType != "" {
		return errorf("On: nil func for %q", eventType)
	}
	if err := checkOn(hs, "On", eventType, name); err != nil {
		return err
	}
	if !fetched && decode.WholeEvent(t) {
		return errorf("On: %s is a whole event's type: a handler is given the event's data (data.object; a thin event's data): register the type of the data (for a thin event, its stripe-go event's Data field)", objectType)
	}
	if !fetched {
		if err := checkObjectType(eventType, objectType, stripeObject); err != nil {
			return err
		}
	}
	if hs.byType == nil { // a zero Handlers, as NewTask and NewAction take it
		hs.byType = make(map[string]registration)
	}
	hs.byType[eventType] = registration{
		objectType: name,
		fetched:    fetched,
		apply: func(ctx context.Context, tx Tx, env *envelope.Envelope, raw []byte, fast bool) error {
			ev := Event[T]{
				ID:         env.ID,
				Type:       env.Type,
				Livemode:   env.Livemode,
				APIVersion: env.APIVersion,
				Account:    env.Account,
				Previous:   env.Previous,
				Raw:        raw,
				ObjectID:   env.ObjectID,
			}
			if env.Created != 0 {
				ev.Created = time.Unix(env.Created, 0)
			}
			if fetched {
				return fn(ctx, tx, ev)
			}
			// A v2 event's ObjectKind is its related object's type, not
			// its data's.
			if !env.V2 && !decode.ObjectMatches(stripeObject, env.ObjectKind) {
				return &DecodeError{EventType: env.Type, Target: objectType, Err: &objectKindError{kind: env.ObjectKind, target: objectType}}
			}
			decode := plainDecode
			if fast {
				decode = fastDecode
			}
			if err := decode(env.Object, &ev.Object); err != nil {
				return &DecodeError{EventType: env.Type, Target: objectType, Err: err, thin: env.V2}
			}
			return fn(ctx, tx, ev)
		},
	}
	return nil
}

// checkObjectType refuses a handler of eventType whose type, objectType,
// is stripe-go's type of a Stripe object (decode.StripeObject:
// stripeObject) that is none of those the type's events carry
// (eventtypes.Objects), by its exact name (eventtypes.GoType):
// *stripe.TreasuryFinancialAccount for account.updated as well as
// *stripe.Customer for invoice.paid. Every event would fail to decode at
// its delivery, or decode the fields the two types share. A type that is
// not a stripe-go resource (the service's own struct, a map), a
// polymorphic one (stripe.PaymentSource) and an event type stripe-mock's
// specification does not describe are not checked.
func checkObjectType(eventType, objectType, stripeObject string) error {
	objects := eventtypes.Objects(eventType)
	if stripeObject == "" || len(objects) == 0 || slices.ContainsFunc(objects, func(o string) bool { return eventtypes.GoType(o) == stripeObject }) {
		return nil
	}
	cure := "the stripe-go type of " + quotedObjects(objects)
	if len(objects) > 1 {
		cure = "stripe-go's type that decodes each of them (*stripe.PaymentSource for customer.source.*, *stripe.AccountExternalAccount for account.external_account.*), or a type of your own"
	}
	return errorf("On: events of type %q carry data.object %s, and %s is the stripe-go type of another object: each would be decoded wrong or fail to decode; register the handler with %s",
		eventType, quotedObjects(objects), objectType, cure)
}

// quotedObjects lists objects quoted, the last after "or": "invoice";
// "bank_account", "card" or "source".
func quotedObjects(objects []string) string {
	q := make([]string, len(objects))
	for i, o := range objects {
		q[i] = strconv.Quote(o)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// warnUnknownTypes logs each event type with a handler that stripe-go
// eventtypes.Version does not know: at Warn, naming them, when known types
// are one or two edits away (a handler for invoice.payed never runs, and
// the events of invoice.paid are answered ignored, 200, and not sent
// again); at Info otherwise, as such a type is more likely one Stripe
// added after that stripe-go, or one of a preview API version, which is
// served all the same. fn is the function that took the snapshot. Only
// the first call for hs logs: the types cannot change after it.
func (hs *Handlers) warnUnknownTypes(log *slog.Logger, fn string) {
	if !hs.warned.CompareAndSwap(false, true) {
		return
	}
	for _, t := range hs.EventTypes() {
		if eventtypes.Known(t) {
			continue
		}
		attrs := []slog.Attr{slog.String("event_type", t), slog.String("checked_by", fn)}
		if near := eventtypes.Nearest(t); len(near) > 0 {
			log.LogAttrs(context.Background(), slog.LevelWarn, "idempotency: a handler's event type is not one stripe-go "+eventtypes.Version+
				" knows, and is one or two letters from one it knows: check its spelling. Stripe sends no event of a misspelt type, "+
				"and the events of the type meant are answered ignored (200) and not sent again",
				append(attrs, slog.String("did_you_mean", strings.Join(near, " or ")))...)
			continue
		}
		log.LogAttrs(context.Background(), slog.LevelInfo, "idempotency: a handler's event type is not one stripe-go "+eventtypes.Version+
			" knows: served, as a type Stripe added since or one of a preview API version; check its spelling if it is neither", attrs...)
	}
}

// EventTypes returns the event types that have a handler, sorted; none
// for a nil Handlers.
func (hs *Handlers) EventTypes() []string {
	if hs == nil {
		return []string{}
	}
	types := make([]string, 0, len(hs.byType))
	for t := range hs.byType {
		types = append(types, t)
	}
	sort.Strings(types)
	return types
}
