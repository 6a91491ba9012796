package idempotency

import (
	"context"
	"net/http"
	"time"
)

// An Observer watches deliveries, inbox attempts and fetches from the
// Stripe API, for metrics and traces: the subpackage otel builds one on
// OpenTelemetry. Every func is optional; a nil *Observer, or a nil func,
// costs nothing but a nil check. The funcs are called on the goroutine of
// the delivery or attempt and must not block; they see ids, types,
// outcomes and durations, never a payload or a secret. They must not
// panic either: unlike OnResult's, their panics are not recovered, so one
// in Attempt or its done ends an inbox worker's process; one in Delivery,
// its done or Link goes up out of the Handler's ServeHTTP, where net/http
// drops the connection unanswered and Stripe retries (Link's comes before
// the event is stored); and one in Fetch fails the attempt as the
// handler's own panic would.
type Observer struct {
	// Delivery is called when a request reaches a [Handler], synchronous or
	// of an inbox, before anything is read. The context it returns is the
	// delivery's from then on (derive it from ctx: its cancellation is the
	// request's); done is called once, after the answer was written and
	// Config.OnResult was called, with the delivery's Result.
	Delivery func(ctx context.Context, r *http.Request) (_ context.Context, done func(Result))

	// Link is called in an inbox's Handler, with the delivery's context,
	// before the event is stored; the text it returns is stored with the
	// event and given back to Attempt: a W3C traceparent, so that the
	// attempt's span can link to the delivery's. A text longer than 256
	// bytes, or one PostgreSQL cannot store (invalid UTF-8, a NUL byte), is
	// not stored.
	Link func(ctx context.Context) string

	// Attempt is called when an inbox worker starts an attempt at an
	// event or a task; rec is its record as leased (Attempt counts this
	// attempt) and link is what Link returned when the event was stored,
	// or "" (a task, or an event stored without Link). The context it
	// returns is the attempt's from then on (derive it from ctx: its
	// cancellation stops the attempt); done is called once, when the
	// attempt's end was recorded and InboxConfig.OnResult was called, with
	// the attempt's Result. On PostgreSQL, done may run while the worker
	// holds a pooled connection for its next event: it must not wait for
	// a connection of the store's pool (use OnResult for that).
	//
	// It is also called, with rec as dead-lettered (State dead_letter),
	// for an attempt whose worker died, hung or lost its connection at
	// the last attempt: the lease that dead-letters the event reports
	// that attempt's end, and done follows at once, with ErrLeaseExpired.
	// Nothing runs in between, and link is "". A worker that hung and
	// returns after it still gets its own done, so that its span ends,
	// with State empty (its end was not recorded) and Err wrapping
	// ErrLeaseExpired: that attempt was counted already, by the lease's
	// report; OnResult is not called for it a second time.
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

// observerKey is the context key of the Observer whose Fetch an OnCurrent
// handler reports to.
type observerKey struct{}

// withFetch returns ctx carrying o for the fetches of the handlers run
// with it, or ctx itself when o has no Fetch.
func (o *Observer) withFetch(ctx context.Context) context.Context {
	if o == nil || o.Fetch == nil {
		return ctx
	}
	return context.WithValue(ctx, observerKey{}, o)
}

// observeFetch reports a fetch to the Observer ctx carries, if any.
func observeFetch(ctx context.Context, eventType, objectID string, d time.Duration, err error) {
	if o, ok := ctx.Value(observerKey{}).(*Observer); ok {
		o.Fetch(ctx, eventType, objectID, d, err)
	}
}

// link is what o's Link returns for ctx, if it is storable; "" otherwise.
func (o *Observer) link(ctx context.Context) string {
	if o == nil || o.Link == nil {
		return ""
	}
	s := o.Link(ctx)
	if len(s) > maxObserverLink || !validText(s) {
		return ""
	}
	return s
}
