package idempotency

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// FetchFunc gets the current state of the object id from the Stripe API, as
// the connected account when account is not empty (Stripe-Account): the
// event's account, or a thin event's context, which may be a path of
// accounts (acct_1/acct_2, an account under a connected account) that only
// Stripe-Context takes. It returns an error wrapping [ErrObjectNotFound]
// when the API answers that the object does not exist (404, code
// resource_missing). [Retrieve] makes one from a stripe-go Retrieve method.
// Any other error fails the event's attempt, as a handler's does, but one
// that wraps [Skip]'s: that ends the event skipped with its reason, the
// handler not run (an object the service stopped fetching for good, a
// connected account that left the platform).
//
// It must return once ctx is done ([FetchTimeout], or the attempt's end):
// it runs inside the event's transaction, holding the object's lock, and
// one that goes on past its context holds both, and the delivery's answer
// or the worker, for as long as it runs.
type FetchFunc[T any] func(ctx context.Context, id, account string) (T, error)

// Retrieve adapts a stripe-go Retrieve method to a FetchFunc:
//
//	idempotency.Retrieve(client.V1Subscriptions.Retrieve)
//
// It sets Stripe-Account for events of a connected account, so that the
// object is fetched as that account and never as the platform, and
// Stripe-Context for a thin event whose context is a path of accounts
// (acct_1/acct_2), as the event itself was fetched. A method whose path
// names the account (client.V1Capabilities.Retrieve, V1Persons.Retrieve:
// /v1/accounts/{account}/capabilities/{id}) gets the event's account there
// too, its params' Account; for an event without an account (the
// platform's own object), or with a context of several accounts, it fails
// at once, without a request, saying so. Those objects, and a card's or a
// bank account's (an external account, or a customer's source, which
// Retrieve leaves as stripe-go builds it), need a FetchFunc of your own.
// Its errors wrap
// [ErrStripeAPI] and quote nothing Stripe answered (an object stripe-go
// could not decode would otherwise be quoted in them, and so in logs and in
// the inbox's LastError): they give the status, the error's type and code
// and the request id, or for an answer that is not the Stripe API's (a
// proxy's or a gateway's 502, 503 or 504 with an HTML page or an empty
// body) its status and that it is not, or that the answer was cut short;
// stripe-go's *stripe.Error stays reachable with errors.As, and a network
// or context error with errors.Is. A 200 whose JSON is not an object (no
// id: a proxy's {"status":"ok"}, which stripe-go decodes into an object
// with every field empty) is an error too, not an object for the handler.
// A 404 with Stripe's code resource_missing (no such object) also wraps
// [ErrObjectNotFound], and so does a v2 method's error answer with that code
// (stripe-go keeps no status of a v2 answer); any other 404 (Unrecognized
// request URL), and one whose message says the object exists in the other
// mode than the API key's (a test key asked for a live object: its error
// says so), does not, and fails its event as any refusal does. So does a 403
// account_invalid, a connected account the platform has no access to (it
// disconnected, or there is no such account), whose error says that rather
// than that the key lacks a permission. It returns when ctx ends, also
// while stripe-go sleeps before a retry (that sleep does not watch the
// context). It panics on a nil retrieve, a programming error, as
// [OnCurrent] does on a nil fetch.
func Retrieve[T any, P interface {
	*PT
	SetStripeAccount(string)
}, PT any](retrieve func(ctx context.Context, id string, params P) (T, error)) FetchFunc[T] {
	if retrieve == nil {
		panic(errorf("Retrieve: nil retrieve func"))
	}
	inPath := accountInPath(reflect.TypeFor[PT]())
	return func(ctx context.Context, id, account string) (T, error) {
		nested := strings.Contains(account, "/")
		if inPath != nil && (account == "" || nested) {
			var zero T
			return zero, errNoAccountForPath
		}
		params := P(new(PT))
		switch sc, ok := any(params).(interface{ SetStripeContext(string) }); {
		case nested && ok:
			// A thin event's context naming an account under another
			// (acct_1/acct_2): a path Stripe-Account does not take.
			sc.SetStripeContext(account)
		case account != "":
			params.SetStripeAccount(account)
			if inPath != nil {
				reflect.ValueOf(params).Elem().FieldByIndex(inPath).Set(reflect.ValueOf(&account))
			}
		}
		obj, err := withinContext(ctx, func() (T, error) { return retrieve(ctx, id, params) })
		if err == nil {
			if objID, res, ok := stripeObject(obj); ok && objID == "" {
				// JSON that is not an object of the Stripe API (a proxy's
				// {"status":"ok"}), decoded into one with every field
				// empty: its handler would write that state.
				var zero T
				return zero, notAskedFor("retrieving the object", "not an object of the Stripe API: JSON without an id", res)
			}
			return obj, nil
		}
		// Only Stripe's resource_missing says the object is gone: a 404
		// without it (Unrecognized request URL, from an API that does not
		// know the path: a stripe-mock without the endpoint, a gateway
		// that forwards it elsewhere) says nothing of the object, and
		// skipping on it would drop every event for good.
		// stripe-go keeps no status of a v2 error answer (a
		// *stripe.V2RawError), only its code.
		// Nor does one that says the object exists in the other mode than
		// the API key's: with such a key every fetch is answered so.
		var serr *stripe.Error
		var v2err *stripe.V2RawError
		notFound := errors.As(err, &serr) && serr.HTTPStatusCode == http.StatusNotFound &&
			serr.Code == stripe.ErrorCodeResourceMissing && keyOfOtherMode(serr) == "" ||
			errors.As(err, &v2err) && v2err.Code == string(stripe.ErrorCodeResourceMissing)
		if err = apiError("retrieving the object", err); notFound {
			err = errorf("%w: %w", ErrObjectNotFound, err)
		}
		return obj, err
	}
}

// errNoAccountForPath is Retrieve's error, before any request, for an
// event that gives no one account to put in a path that names one.
var errNoAccountForPath = errorf("retrieving the object: the method's path names one connected account, " +
	"which an event without an account (the platform's own object), or with a context of several (acct_1/acct_2), does not give: " +
	"fetch such objects with a FetchFunc of your own")

// accountInPath returns the index of the field of a stripe-go params
// struct that puts an account in the request's path, Account *string
// tagged form:"-" (/v1/accounts/{account}/capabilities/{id}), or nil when
// it has none, or has a Customer one beside it: a card's or a bank
// account's object is a connected account's external account or a
// customer's source, which the event's account does not tell apart.
func accountInPath(params reflect.Type) []int {
	if params.Kind() != reflect.Struct {
		return nil
	}
	inPath := func(name string) (reflect.StructField, bool) {
		f, ok := params.FieldByName(name)
		return f, ok && f.IsExported() && f.Type == reflect.TypeFor[*string]() && f.Tag.Get("form") == "-"
	}
	f, ok := inPath("Account")
	if _, customer := inPath("Customer"); !ok || customer {
		return nil
	}
	return f.Index
}

// stripeObject returns the ID and the kept answer (LastResponse) of obj, a
// stripe-go object or a pointer to one; ok is false when obj has no
// string field ID.
func stripeObject(obj any) (id string, res *stripe.APIResponse, ok bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "", nil, false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return "", nil, false
	}
	field := func(name string) reflect.Value {
		sf, found := v.Type().FieldByName(name)
		if !found || !sf.IsExported() {
			return reflect.Value{}
		}
		f, err := v.FieldByIndexErr(sf.Index) // not through a nil embedded pointer
		if err != nil {
			return reflect.Value{}
		}
		return f
	}
	f := field("ID")
	if !f.IsValid() || f.Kind() != reflect.String {
		return "", nil, false
	}
	if lr := field("LastResponse"); lr.IsValid() {
		res, _ = lr.Interface().(*stripe.APIResponse)
	}
	return f.String(), res, true
}

// FetchTimeout bounds one fetch of an [OnCurrent] handler, within the
// handler's own timeout.
const FetchTimeout = 5 * time.Second

// fetchUnavailableError is an [OnCurrent] fetch that failed for a reason
// that may pass, while its event's handler had time left: the API
// unreachable, rate-limited or failing (stripeAPIError.transient), or the
// fetch past FetchTimeout. A synchronous Handler answers it 503
// stripe_unavailable, as a thin event's fetch; its text is err's.
type fetchUnavailableError struct{ err error }

func (e *fetchUnavailableError) Error() string { return e.err.Error() }
func (e *fetchUnavailableError) Unwrap() error { return e.err }

// OnCurrent registers fn for eventTypes, events about one kind of mutable
// object (a subscription, a customer), with the object as it is now rather
// than as the event's payload shows it: Stripe does not deliver events in
// order, and two events of one second cannot be ordered from their
// payloads. The event is a trigger; the object fetched is the truth.
//
// For each event, in the event's transaction:
//
//  1. The object (data.object.id; for a thin event, its related_object.id;
//     under the event's Account) is locked, per kind of object: while one
//     event's handler holds it, another event of the same object waits, so
//     two fetch-and-write sequences of one object never interleave. On
//     PostgreSQL it is a row lock in idempotency_objects, held until the
//     transaction ends; a fetch is made while it is held. The kind is
//     named by the event's type less its last segment
//     ("customer.subscription"; a v2 type's bracketed part and a v1 thin
//     event's "v1." prefix aside: v1.billing.meter.error_report_triggered
//     is about a billing.meter, as billing.meter.updated is), whatever
//     other kinds the call has, so the lock, and the fetch record of
//     step 2, are shared by the replicas of a release that adds a type to
//     the call, of a kind the call has or of a new one, and those still
//     running the release before it: events of one object wait for each
//     other across a rolling deploy too. So do the On handlers of the
//     kind's other types (step 3).
//  2. If the object was fetched after this event was received, by a
//     handler whose transaction committed, the fetch is skipped and so is
//     fn: that handler wrote a state that already includes this event's
//     change (Stripe sends an event after the change, so a fetch that
//     started after the event arrived sees it). The event is processed.
//     "After" is decided on one counter, the store's (idempotency_seq):
//     an inbox event takes its number when stored, a synchronous delivery
//     when its handler first starts (a rerun of its transaction keeps
//     it), a fetch just before it is sent; whatever the clocks of the
//     processes. Within one process a synchronous delivery is also covered
//     by a committed fetch in its store that started after it arrived, on
//     the process's monotonic clock, before it takes a number or the lock:
//     the wait for a pooled connection does not make it fetch again. A
//     backlog of updates about one subscription costs one fetch in inbox
//     mode, where events of one object are applied one after the other;
//     100 concurrent synchronous deliveries cost 1–4 fetches on every
//     store configuration of the conformance suite. Events stored, or
//     deliveries made, one after the other, each after the fetch before
//     it, fetch each time, in both modes.
//  3. Otherwise fetch gets the object, within [FetchTimeout], as the
//     event's connected account, and fn runs with ev.Object set to it (ev.Raw
//     is still the payload). A fetch error fails the event: the
//     synchronous Handler answers 503 {"error":"stripe_unavailable"} for
//     one that may pass (the API unreachable, a 429 or a 5xx, as
//     [Retrieve]'s errors say, or the fetch past FetchTimeout), as it
//     answers a thin event's fetch, and 500 for any other (a refusal, a
//     FetchFunc's own error), and Stripe retries either; the inbox retries
//     with backoff. An object the API no longer knows (404 resource_missing,
//     which Retrieve returns as ErrObjectNotFound; or ErrObjectNotFound from
//     any FetchFunc) is skipped with the reason "the object's FetchFunc
//     returned ErrObjectNotFound (Retrieve's answer to a 404
//     resource_missing)": objects Stripe keeps after their end
//     (a canceled subscription, a deleted customer) are fetched and the
//     handler sees that state; those it deletes for good (a product, a
//     coupon) are not, and their .deleted events are skipped: register
//     those types with [On]. An On handler of an event type of a kind
//     an OnCurrent call of the same Handlers registered (product.deleted
//     beside product.updated) takes the object's lock of step 1 before
//     it runs, in both modes, held until its transaction ends: it waits
//     for an fn that fetched the object just before its deletion to
//     commit, and a fetch that waited for it is answered 404, so a
//     deleted object's row does not come back. Its wait counts toward
//     its handler's timeout, as fn's does; the On handlers of other
//     kinds take no lock. A deletion applied without the lock (by a
//     Handlers with no OnCurrent call of the kind: another service's,
//     or a release's before the one that adds the call) can still be
//     followed by fn's write of a state fetched before it: there, mark
//     the object deleted rather than delete it (an upsert of the mark,
//     as fn's first write may still be to come), and have fn leave a
//     marked object alone. A key of
//     the other mode than the events' (a test key for live events) is
//     answered 404 resource_missing for every object, saying that the
//     object exists in the other mode: that 404 is a fetch error, not
//     ErrObjectNotFound, and fails the event. An event
//     that names no object (a thin event without related_object) is
//     skipped without a fetch ("the event names no object to fetch").
//
// OnCurrent panics on a programming error, as [On] does: no event types, a
// nil fetch or fn, an event type that already has a handler or that On
// refuses (a wildcard such as "customer.subscription.*"), an event type
// of a kind of object another OnCurrent call of hs registered
// ([ErrDuplicateRegistration]: register every event type of one kind in
// one call, as the two would share its lock and fetch record), or an event
// type whose kind's scope, "current:" and the kind, no store can keep (a
// NUL byte, invalid UTF-8, over 1024 bytes: [ErrInvalidKey]), an event
// type given twice, or a call after [NewHandler] or [NewInbox] took its
// snapshot of hs. A call that panics
// registers none of its types. [OnCurrentSafely] returns the error
// instead.
func OnCurrent[T any](hs *Handlers, eventTypes []string, fetch FetchFunc[T], fn EventFunc[T]) {
	if err := OnCurrentSafely(hs, eventTypes, fetch, fn); err != nil {
		panic(err)
	}
}

// OnCurrentSafely is [OnCurrent] returning the error instead of
// panicking; the error wraps [ErrDuplicateRegistration] when a type has a
// handler, is given twice or is of a kind another call registered, and
// [ErrInvalidKey] when no store can keep the scope of one of its kinds. A
// refused call registers none of its types.
func OnCurrentSafely[T any](hs *Handlers, eventTypes []string, fetch FetchFunc[T], fn EventFunc[T]) error {
	switch {
	case hs == nil:
		return errorf("OnCurrent: nil *Handlers")
	case len(eventTypes) == 0:
		return errorf("OnCurrent: no event types")
	case fetch == nil || fn == nil:
		return errorf("OnCurrent: nil fetch or handler func")
	}
	types := slices.Sorted(slices.Values(eventTypes))
	kinds := currentKinds(types)
	reg := &currentRegistration{local: localFetches{started: map[localObject]time.Time{}}}
	for _, kind := range kinds {
		// The scope is part of each object's key, which a store indexes:
		// one no store can keep would skip every event of the kind at run
		// time.
		if err := checkKey(fmt.Sprintf("the scope of kind %q (\"current:\" and the kind)", kind), currentScope(kind)); err != nil {
			return errorf("OnCurrent: %w", err)
		}
	}
	for _, kind := range kinds {
		if prev, ok := hs.currentKinds[kind]; ok {
			return errorf("OnCurrent: %w: the events of %s objects have an OnCurrent call already (with %q); register every event type of one kind of object in one call, whose lock and fetch record they share",
				ErrDuplicateRegistration, kind, prev)
		}
	}
	var zero T
	name := fmt.Sprintf("%T (OnCurrent)", zero) // not the struct{} registered below
	// Every type is checked before any is registered: a refusal (or
	// OnCurrent's panic, recovered) leaves hs as it was.
	for i, eventType := range types {
		if i > 0 && types[i-1] == eventType {
			return errorf("OnCurrent: %w: event type %q is given twice", ErrDuplicateRegistration, eventType)
		}
		if err := checkOn(hs, "OnCurrent", eventType, name); err != nil {
			return err
		}
	}
	for _, eventType := range types {
		scope := currentScope(currentKind(eventType))
		// The object is the envelope's (Event.ObjectID): data.object is not
		// decoded, and a thin event's data, the event's own fields, names none.
		if err := onSafely(hs, eventType, name, true, func(ctx context.Context, tx Tx, ev Event[struct{}]) error {
			return applyCurrent(ctx, tx, reg, scope, ev, fetch, fn)
		}); err != nil {
			return err // checkOn passed every type: not reached
		}
	}
	if hs.currentKinds == nil { // a zero Handlers
		hs.currentKinds = map[string]string{}
	}
	for _, typ := range types { // sorted: each kind keeps its first type
		if kind := currentKind(typ); hs.currentKinds[kind] == "" {
			hs.currentKinds[kind] = typ
		}
	}
	return nil
}

// currentKinds returns the kinds of object of the event types, sorted,
// each once (see currentKind).
func currentKinds(types []string) []string {
	kinds := make([]string, 0, len(types))
	for _, typ := range types {
		kinds = append(kinds, currentKind(typ))
	}
	slices.Sort(kinds)
	return slices.Compact(kinds)
}

// currentKind returns the kind of object of an event type: the type less
// its last segment, less a v2 type's bracketed part
// (v2.core.account[requirements].updated is about a v2.core.account), and
// less a v1 thin event's "v1." prefix (v1.billing.meter.error_report_triggered
// is about the billing.meter that billing.meter.updated is about).
func currentKind(typ string) string {
	typ = strings.TrimPrefix(typ, "v1.")
	var plain strings.Builder
	depth := 0
	for _, r := range typ {
		switch {
		case r == '[':
			depth++
		case r == ']' && depth > 0:
			depth--
		case depth == 0:
			plain.WriteRune(r)
		}
	}
	kind := plain.String()
	if i := strings.LastIndexByte(kind, '.'); i > 0 {
		kind = kind[:i]
	}
	return kind
}

// currentScope is the guard scope of OnCurrent's locks and fetch records
// of the objects of kind (currentKind): the kind's alone, whatever other
// kinds its call has, so that every registration of the kind (a release
// that adds a type of another kind to the call, the release before it)
// locks the same row of an object.
func currentScope(kind string) string { return "current:" + kind }

// currentRegistration is what this process remembers of one OnCurrent
// call's fetches.
type currentRegistration struct {
	local localFetches
}

// localFetches remembers, per store and object, when this process's last
// committed fetch started, on the monotonic clock: a synchronous delivery
// that arrived here before it is covered by it, even though it took its
// number on the store's counter later, after waiting for a pooled
// connection. Only in the same store: one Handlers may serve several, and
// a fetch wrote the object's state in its own store alone.
type localFetches struct {
	mu      sync.Mutex
	started map[localObject]time.Time
}

// localObject is an object of one store: the store (a weak pointer to its
// *MemoryStore or *PgxStore, which compares equal for one store and keeps
// none alive: one Handlers may outlive many stores, one per test), the
// scope of its kind (currentScope: a call of several kinds keeps each
// kind's objects apart, as their locks and fetch records are) and the
// object's key (fetchKey).
type localObject struct {
	store any
	scope string
	key   string
}

// fetchKey is the key of the object id of account (empty: the
// platform's) among OnCurrent's fetch records: the id, prefixed with a
// connected account's id and a slash. Some ids are unique within one
// account only (a capability's is its name, card_payments), and a fetch
// under one account says nothing of the object of that id under another.
// No Stripe id has a slash (each is a segment of its API path), so two
// objects never share a key; a platform's key is its id, as it was before
// accounts were keyed.
func fetchKey(account, id string) string {
	if account == "" {
		return id
	}
	return account + "/" + id
}

// maxLocalFetches bounds localFetches; past it, entries older than
// localFetchMemory are dropped (a delivery in flight that long fetches
// again, which is safe), and when more objects than that were fetched
// within it (a burst), every entry is: a delivery that an entry dropped
// would have covered is decided on the store's counter, as without one.
const (
	maxLocalFetches  = 4096
	localFetchMemory = time.Minute
)

// covers reports whether a fetch of the object that started after arrived
// has committed in this process.
func (l *localFetches) covers(obj localObject, arrived time.Time) bool {
	if arrived.IsZero() {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	started, ok := l.started[obj]
	return ok && started.After(arrived)
}

// record notes a committed fetch of the object that started at started.
func (l *localFetches) record(obj localObject, started time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.started) >= maxLocalFetches {
		for k, t := range l.started {
			if time.Since(t) > localFetchMemory {
				delete(l.started, k)
			}
		}
		if len(l.started) >= maxLocalFetches {
			// Each record past the bound would walk them all again.
			clear(l.started)
		}
	}
	if prev, ok := l.started[obj]; !ok || started.After(prev) {
		l.started[obj] = started
	}
}

// objectTx is a store transaction that keeps per-object locks and order
// records: the Tx of MemoryStore and of PgxStore.
type objectTx interface {
	// eventSeq is the event's number on the store's counter: taken at
	// ingest for an inbox event, now otherwise.
	eventSeq(ctx context.Context) (int64, error)
	// lockObject locks (scope, id) in the transaction, waiting while
	// another transaction holds it, and returns the number taken before
	// its last committed fetch (0 when never) and a new number taken now,
	// under the lock.
	lockObject(ctx context.Context, scope, id string) (lastFetch, now int64, err error)
	// markFetched records that (scope, id) was fetched after number seq.
	markFetched(ctx context.Context, scope, id string, seq int64) error
	// arrivedAt is when the delivery reached this process (Claim.arrived).
	arrivedAt() time.Time
	// objectStore names the store whose transaction it is, weakly: what
	// a fetch in it wrote, it wrote there.
	objectStore() any
	// order is CheckOrder's record, for tx's event.
	order(ctx context.Context, scope, key string, created time.Time) (Order, error)
}

func applyCurrent[T any](ctx context.Context, tx Tx, reg *currentRegistration, scope string, ev Event[struct{}], fetch FetchFunc[T], fn EventFunc[T]) error {
	ot, ok := tx.(objectTx)
	if !ok {
		return errorf("%w (got %T)", ErrNeedsStoreTx, tx)
	}
	id := ev.ObjectID // data.object.id, or a thin event's related_object.id
	key, unkeyed := objectLockKey(scope, ev.Account, id)
	if unkeyed != "" {
		return Skip(unkeyed)
	}
	local := localObject{store: ot.objectStore(), scope: scope, key: key}
	if reg.local.covers(local, ot.arrivedAt()) {
		return nil // fetched here after this delivery arrived, and that state written
	}
	seq, err := ot.eventSeq(ctx)
	if err != nil {
		return err
	}
	lastFetch, now, err := ot.lockObject(ctx, scope, key)
	if err != nil {
		return err
	}
	if lastFetch > seq {
		return nil // fetched after this event arrived, and that state written
	}
	fetchCtx, cancel := context.WithTimeout(ctx, FetchTimeout)
	fetchStarted := time.Now()
	obj, err := fetch(fetchCtx, id, ev.Account)
	timedOut := fetchCtx.Err() != nil
	cancel()
	observeFetch(ctx, ev.Type, id, time.Since(fetchStarted), err)
	switch {
	case errors.Is(err, ErrObjectNotFound):
		// The FetchFunc said so: Retrieve for the API's 404, or a test's
		// fake, which asked no API.
		return Skip("the object's FetchFunc returned ErrObjectNotFound (Retrieve's answer to a 404 resource_missing)")
	case err != nil:
		err = errorf("fetching the current object of %s: %w", ev.Type, err)
		if ctx.Err() == nil && (timedOut || transientAPIError(err)) {
			// The handler's own time is not out: a fetch that may pass.
			return &fetchUnavailableError{err}
		}
		return err
	}
	if err := ot.markFetched(ctx, scope, key, now); err != nil {
		return err
	}
	tx.AfterCommit(func(context.Context) { reg.local.record(local, fetchStarted) })
	return fn(ctx, tx, Event[T]{
		ID: ev.ID, Type: ev.Type, Created: ev.Created, Livemode: ev.Livemode, APIVersion: ev.APIVersion,
		Account: ev.Account, Object: obj, Previous: ev.Previous, Raw: ev.Raw, ObjectID: id,
	})
}

// lockCurrentObject takes, for an On handler of an event about an object
// of a kind that an OnCurrent call of its Handlers registered (the scope
// of its lock: currentScope), the object's lock that OnCurrent's handlers
// of the kind take, held until tx ends, before the handler runs: a
// product.deleted handler then waits for an OnCurrent handler of the
// product that fetched it before its deletion to commit, and an OnCurrent
// fetch that waited for the deletion to commit is answered 404. A
// transaction takes the lock of its event's object alone, before its
// handler runs, as applyCurrent does: no handler holds one object's lock
// while it waits for another's. No lock where no OnCurrent handler can
// hold one: an event that names no object, or whose key no store can
// keep (OnCurrent skips both), and a store whose Tx keeps no locks
// (OnCurrent fails its every event with ErrNeedsStoreTx).
func lockCurrentObject(ctx context.Context, tx Tx, scope, account, id string) error {
	ot, ok := tx.(objectTx)
	if !ok {
		return nil
	}
	key, unkeyed := objectLockKey(scope, account, id)
	if unkeyed != "" {
		return nil
	}
	_, _, err := ot.lockObject(ctx, scope, key)
	return err
}

// objectLockKey is the key of the lock of object id of account in scope
// (fetchKey), or, when the object has none, why: the event names no
// object, or one no store can key.
func objectLockKey(scope, account, id string) (key, unkeyed string) {
	if id == "" {
		return "", "the event names no object to fetch"
	}
	if checkGuardKey(scope, id) != nil {
		return "", "data.object.id is not valid text"
	}
	key = fetchKey(account, id)
	if checkGuardKey(scope, key) != nil {
		return "", "account and data.object.id are too long to key the object"
	}
	return key, ""
}
