package idempotency

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/seed-a84bb619/idempotency/internal/envelope"
)

// dispatcher claims an event and runs its registered handler in one store
// transaction: what the webhook Handler does in the request and an Inbox
// worker does later, alike.
type dispatcher struct {
	store    Store
	tasks    *eventTasks // what it took of the Handlers it was built on: the tasks its events may enqueue
	handlers map[string]registration
	early    map[string][]string // event type → guard scopes claimed with the event
	fast     bool                // decode with the compiled decoder
	timeout  time.Duration
	setting  string // the field timeout comes from, named in ErrTimeout's text
	// withTimeout bounds a transaction by timeout: context.WithTimeout, or
	// in tests one whose deadline the test can reach early.
	withTimeout func(context.Context, time.Duration) (context.Context, context.CancelFunc)
}

func newDispatcher(store Store, hs *Handlers, fast bool, timeout time.Duration, setting string) dispatcher {
	return dispatcher{store: store, tasks: newEventTasks(hs), handlers: dispatchedHandlers(hs), early: hs.earlyGuardScopes(), fast: fast, timeout: timeout, setting: setting,
		withTimeout: context.WithTimeout}
}

// dispatchedHandlers is hs's handlers by event type, each On handler of an
// event type of a kind of object that an OnCurrent call of hs registered
// (product.deleted beside OnCurrent's product.updated) marked with the
// kind's lock (registration.objectLock). It is decided here, once: the
// handlers of every other type take no lock, at no cost per event.
func dispatchedHandlers(hs *Handlers) map[string]registration {
	handlers := maps.Clone(hs.byType)
	for eventType, r := range handlers {
		if kind := currentKind(eventType); !r.fetched && hs.currentKinds[kind] != "" {
			r.objectLock = currentScope(kind)
			handlers[eventType] = r
		}
	}
	return handlers
}

func (d *dispatcher) handles(eventType string) bool {
	_, ok := d.handlers[eventType]
	return ok
}

// decodes reports whether eventType's handler is given the payload's
// data.object, whose shape follows the event's API version.
func (d *dispatcher) decodes(eventType string) bool {
	r, ok := d.handlers[eventType]
	return ok && !r.fetched
}

// run claims env's event and applies its handler, or with no handler
// records the claim as ignored, within d.timeout. fence, when not nil,
// finishes the event's inbox row in the same transaction. AfterCommit
// panics are added to res, and a skip's reason.
func (d *dispatcher) run(ctx context.Context, env *envelope.Envelope, payload []byte, receivedAt time.Time, fence *inboxFence, res *Result) (Outcome, error) {
	claim := d.claim(env, receivedAt, fence)
	claim.OnAfterCommitPanic = func(p *PanicError) { res.AfterCommitPanics = append(res.AfterCommitPanics, p) }
	if fence == nil {
		claim.arrived = time.Now()
	}
	var apply ApplyFunc
	var skip string // the reason of the last attempt's Skip, for the log
	if reg, ok := d.handlers[env.Type]; ok {
		apply = func(ctx context.Context, tx Tx) (err error) {
			defer func() { skip, _ = skipReason(err) }()
			defer recoverPanic(&err)
			if reg.objectLock != "" {
				if err := lockCurrentObject(ctx, tx, reg.objectLock, env.Account, env.ObjectID); err != nil {
					return err
				}
			}
			return reg.apply(ctx, tx, env, payload, d.fast)
		}
	}

	ctx, cancel := d.withTimeout(ctx, d.timeout)
	defer cancel()
	outcome, err := d.store.Run(ctx, claim, apply)
	if errors.Is(err, ErrStoreUnavailable) {
		return OutcomeUnavailable, err
	}
	if outcome == OutcomeSkipped {
		res.SkipReason = skip
	}
	return outcome, timeoutErr(ctx, d.timeout, "the handler's transaction", d.setting, err)
}

// claim is the claim of env's event, with the guards its handler claims
// with the event.
func (d *dispatcher) claim(env *envelope.Envelope, receivedAt time.Time, fence *inboxFence) Claim {
	c := Claim{
		EventID: env.ID, EventType: env.Type, ObjectID: env.ObjectID,
		Account: env.Account, Livemode: env.Livemode, ReceivedAt: receivedAt,
		fence: fence,
		seq:   new(int64),
		tasks: d.tasks,
	}
	if !d.handles(env.Type) {
		c.Outcome = OutcomeIgnored
		return c
	}
	if scopes := d.early[env.Type]; len(scopes) > 0 && env.ObjectID != "" {
		c.Guards = make([]GuardKey, len(scopes))
		for i, scope := range scopes {
			c.Guards[i] = GuardKey{Scope: scope, Key: env.ObjectID}
		}
	}
	return c
}

// recoverPanic, deferred, turns a panic of the function it is deferred in
// into a *PanicError in *err, and an error it returned whose Error method
// panics into one that says so.
func recoverPanic(err *error) {
	if v := recover(); v != nil {
		*err = newPanicError(v)
		return
	}
	*err = describableError(*err)
}

// describableError returns err, or, when its Error method panics, an
// error that names its type instead: a typed nil (a nil *T returned as an
// error, whose Error dereferences it) would panic again wherever the
// attempt is recorded, logged or reported, outside any recover, and take
// an inbox worker, and its process, down. So would an error whose Unwrap
// panics, or that wraps a typed nil of the package's own types, which the
// package reads where it finds them (a skip's reason, a panic's stack):
// that one names both types. One whose Unwrap chain does not end would
// hang errors.Is.
func describableError(err error) error {
	if err == nil {
		return nil
	}
	typ := fmt.Sprintf("%T", err)
	if panics(func() { _ = err.Error() }) {
		return errorf("returned an error of type %s whose Error method panics (a typed nil?)", typ)
	}
	var inner error
	var deep bool
	if panics(func() { inner, deep = wrappedNilOwn(err) }) {
		return errorf("returned an error of type %s whose Unwrap method panics (a typed nil?)", typ)
	}
	if deep {
		return errorf("returned an error of type %s whose Unwrap chain is over %d errors deep (an Unwrap that returns its own error?)", typ, maxWrapDepth)
	}
	if inner != nil {
		return errorf("returned an error of type %s that wraps a nil %s", typ, fmt.Sprintf("%T", inner))
	}
	return err
}

// panics reports whether f panics, and recovers.
func panics(f func()) (panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	f()
	return false
}

// wrappedNilOwn returns the first typed nil of the package's error types
// that err's tree holds (errors.As would find it, and the package reads
// it or its Unwrap), or nil; deep reports a tree deeper than maxWrapDepth
// (an Unwrap that returns its own error), where errors.Is and errors.As
// would walk for ever. An Unwrap that panics is its caller's to recover
// (describableError).
func wrappedNilOwn(err error) (inner error, deep bool) {
	return nilOwnWithin(err, maxWrapDepth)
}

// maxWrapDepth bounds wrappedNilOwn's walk down an error's tree.
const maxWrapDepth = 100

func nilOwnWithin(err error, depth int) (error, bool) {
	if ownError(err) && isNil(err) {
		return err, false
	}
	if depth == 0 {
		return nil, true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if next := u.Unwrap(); next != nil {
			return nilOwnWithin(next, depth-1)
		}
	case interface{ Unwrap() []error }:
		for _, next := range u.Unwrap() {
			if next != nil {
				if inner, deep := nilOwnWithin(next, depth-1); inner != nil || deep {
					return inner, deep
				}
			}
		}
	}
	return nil, false
}

// timeoutErr wraps err in ErrTimeout when ctx, bounded by d, ran out; the
// text names what timed out, and the setting d comes from.
func timeoutErr(ctx context.Context, d time.Duration, what, setting string, err error) error {
	if err != nil && ranOut(ctx) {
		return errorf("%w after %s (%s, %s): %w", ErrTimeout, d, what, setting, err)
	}
	return err
}

// ranOut reports whether ctx's deadline has passed. ctx.Err says so only
// once ctx's timer fired: a context of the store's with the same deadline
// (a PgxStore's inbox insert) may have failed the call first.
func ranOut(ctx context.Context) bool {
	switch ctx.Err() {
	case context.DeadlineExceeded:
		return true
	case nil:
		deadline, ok := ctx.Deadline()
		return ok && !time.Now().Before(deadline)
	}
	return false // cancelled
}
