package idempotency

import (
	"context"
	"log/slog"
	"net/http"
	"time"
)

// An Observer watches deliveries, inbox attempts and fetches from the
// Stripe API, for metrics and traces: the subpackage otel builds one on
// OpenTelemetry. Every func is optional; a nil *Observer, or a nil func,
// costs nothing but a nil check. The funcs are called on the goroutine of
// the delivery or attempt and must not block; they see ids, types,
// outcomes and durations, never a payload or a secret. A panic in one of
// them is recovered and logged at error level, as OnResult's is, and goes
// no further: watching must not fail a delivery or an attempt, nor end an
// inbox worker's process. What the func would have given is then left
// out: a Delivery or an Attempt that panics leaves the context as it was
// and has no done; a Link that panics stores no link. A Delivery or an
// Attempt that returns a nil context leaves the context as it was, and
// its done is called.
type Observer struct {
	// Delivery is called when a request reaches a [Handler], synchronous or
	// of an inbox, before anything is read. The context it returns is the
	// delivery's from then on (derive it from ctx: its cancellation is the
	// request's); done is called once, after the answer was written and
	// Config.OnResult was called, with the delivery's Result.
	Delivery func(ctx context.Context, r *http.Request) (_ context.Context, done func(Result))

	// Link is called in an inbox's Handler, with the delivery's context,
	// before the event is stored, and in [Task.Enqueue], with the handler's
	// context (the delivery's in synchronous mode, the attempt's in an
	// inbox); the text it returns is stored with the event or the task and
	// given back to Attempt: a W3C traceparent, so that the attempt's span
	// can link to the span that stored it. A text longer than 256 bytes, or
	// one PostgreSQL cannot store (invalid UTF-8, a NUL byte), is not
	// stored.
	Link func(ctx context.Context) string

	// Attempt is called when an inbox worker starts an attempt at an
	// event or a task; rec is its record as leased (Attempt counts this
	// attempt) and link is what Link returned when the event or the task
	// was stored, or "" (stored without Link). The context it
	// returns is the attempt's from then on (derive it from ctx: its
	// cancellation stops the attempt); done is called once, when the
	// attempt's end was recorded and InboxConfig.OnResult was called, with
	// the attempt's Result. On PostgreSQL, done may run while the worker
	// holds a pooled connection for its next event: it must not wait for
	// a connection of the store's pool (use OnResult for that).
	//
	// It is also called to report an attempt whose lease expired with its
	// end not recorded (its worker died, hung, or could not reach the
	// database), by the lease that finds it so, and done follows at once,
	// failed with ErrLeaseExpired; nothing runs in between. Before the
	// last attempt, the attempt that takes the event over calls it as it
	// starts, before its own Attempt, with rec as the attempt it takes
	// over leased it (State processing; its Attempt, AttemptedAt and
	// LeaseUntil) and the stored link, and done gets State failed; at the
	// last, the lease that dead-letters the event calls it with rec as
	// dead-lettered (State dead_letter) and link "". A worker that hung
	// and returns after it, or gave up recording its end, still gets its
	// own done, so that its span ends, with State empty (its end was not
	// recorded) and Err wrapping ErrLeaseExpired: that attempt is counted
	// by the lease's report, made or to come; OnResult is not called for
	// it a second time (see InboxConfig.OnResult).
	Attempt func(ctx context.Context, rec InboxRecord, link string) (_ context.Context, done func(Result))

	// Fetch is called after each fetch of an object's current state from
	// the Stripe API by an [OnCurrent] handler, with the event's type, the
	// object's id, how long the fetch took and its error (nil when it
	// succeeded; wrapping [ErrObjectNotFound] for a 404). ctx is the
	// handler's.
	Fetch func(ctx context.Context, eventType, objectID string, d time.Duration, err error)
}

// maxObserverLink bounds what Observer.Link may store with an event, in
// bytes: a W3C traceparent takes 55.
const maxObserverLink = 256

// callHook calls fn, which calls a func of the user's that watches (an
// Observer's, OnResult), and logs its panic at error level as hook's,
// with the ids of res when res is not nil. It reports whether fn
// panicked. The panic goes no further: it is not the failure of what was
// watched, which goes on.
func callHook(ctx context.Context, log *slog.Logger, hook string, res *Result, fn func()) (panicked bool) {
	p := callRecover(ctx, func(context.Context) { fn() })
	if p == nil {
		return false
	}
	attrs := []slog.Attr{slog.String("panic", panicText(p.Value)), slog.String("stack", string(p.Stack))}
	if res != nil {
		attrs = res.appendIDs(nil, attrs...)
	}
	log.LogAttrs(ctx, slog.LevelError, "idempotency: "+hook+" panicked", attrs...)
	return true
}

// delivery calls o's Delivery, if any, for r, whose context is ctx; it
// returns ctx and no done when there is none or it panicked, and ctx with
// its done when it returned a nil context.
func (o *Observer) delivery(ctx context.Context, log *slog.Logger, r *http.Request) (context.Context, func(Result)) {
	if o == nil || o.Delivery == nil {
		return ctx, nil
	}
	var out context.Context
	var done func(Result)
	if callHook(ctx, log, "Observer.Delivery", nil, func() { out, done = o.Delivery(ctx, r) }) {
		return ctx, nil
	}
	return keptContext(out, ctx), done
}

// attempt calls o's Attempt, if any, for rec; it returns ctx and no done
// when there is none or it panicked, and ctx with its done when it
// returned a nil context.
func (o *Observer) attempt(ctx context.Context, log *slog.Logger, rec InboxRecord, link string) (context.Context, func(Result)) {
	if o == nil || o.Attempt == nil {
		return ctx, nil
	}
	var out context.Context
	var done func(Result)
	res := Result{Kind: rec.Kind, EventID: rec.EventID, EventType: rec.EventType}
	if callHook(ctx, log, "Observer.Attempt", &res, func() { out, done = o.Attempt(ctx, rec, link) }) {
		return ctx, nil
	}
	return keptContext(out, ctx), done
}

// keptContext is out, the context a Delivery or an Attempt returned, or
// ctx, the one it was given, when out is nil: its done is called all the
// same.
func keptContext(out, ctx context.Context) context.Context {
	if out == nil {
		return ctx
	}
	return out
}

// handlerObserver is an Observer's Fetch and Link with the log of their
// panics, as a handler's context carries it: Fetch for the fetches of
// OnCurrent handlers, Link for the tasks a handler enqueues.
type handlerObserver struct {
	o   *Observer
	log *slog.Logger
}

// handlerObserverOf is what withObserver puts in a context for o, logging
// to log; nil when o has neither Fetch nor Link.
func handlerObserverOf(o *Observer, log *slog.Logger) *handlerObserver {
	if o == nil || (o.Fetch == nil && o.Link == nil) {
		return nil
	}
	return &handlerObserver{o: o, log: log}
}

// withObserver returns ctx carrying f for the handlers run with it, or ctx
// itself when f is nil.
func (f *handlerObserver) withObserver(ctx context.Context) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, handlerObserverKey{}, f)
}

// handlerObserverKey is the context key of the handlerObserver a handler
// reports its fetches to and links its tasks with.
type handlerObserverKey struct{}

// observeFetch reports a fetch to the Observer ctx carries, if any.
func observeFetch(ctx context.Context, eventType, objectID string, d time.Duration, err error) {
	if f, ok := ctx.Value(handlerObserverKey{}).(*handlerObserver); ok && f.o.Fetch != nil {
		callHook(ctx, f.log, "Observer.Fetch", nil, func() { f.o.Fetch(ctx, eventType, objectID, d, err) })
	}
}

// observeLink is what Link of the Observer ctx carries returns for ctx,
// if it is storable: the link a task enqueued with ctx is stored with.
func observeLink(ctx context.Context) string {
	if f, ok := ctx.Value(handlerObserverKey{}).(*handlerObserver); ok {
		return f.o.link(ctx, f.log)
	}
	return ""
}

// link is what o's Link returns for ctx, if it is storable; "" otherwise,
// and when it panicked.
func (o *Observer) link(ctx context.Context, log *slog.Logger) string {
	if o == nil || o.Link == nil {
		return ""
	}
	var s string
	callHook(ctx, log, "Observer.Link", nil, func() { s = o.Link(ctx) })
	if len(s) > maxObserverLink || !validText(s) {
		return ""
	}
	return s
}
