package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// observed records what an Observer was told.
type observed struct {
	mu         sync.Mutex
	deliveries []idempotency.Result
	attempts   []idempotency.Result
	links      map[string]string // event id → link given to Attempt
	fetches    []observedFetch
}

type observedFetch struct {
	eventType, objectID string
	err                 error
	scope               string // what the context carried: "delivery" or the attempt's event id
}

// scopeKey is the context key the test's Observer sets in the contexts it
// returns, so that a test sees which context reached a handler or a fetch.
type scopeKey struct{}

func scopeOf(ctx context.Context) string {
	s, _ := ctx.Value(scopeKey{}).(string)
	return s
}

// observer returns an Observer with every hook, recording into o.
func (o *observed) observer(link string) *idempotency.Observer {
	return &idempotency.Observer{
		Delivery: func(ctx context.Context, r *http.Request) (context.Context, func(idempotency.Result)) {
			if r.Method == "" || r.Body == nil {
				panic("Delivery got no request")
			}
			return context.WithValue(ctx, scopeKey{}, "delivery"), func(res idempotency.Result) {
				o.mu.Lock()
				defer o.mu.Unlock()
				o.deliveries = append(o.deliveries, res)
			}
		},
		Link: func(ctx context.Context) string {
			if s := scopeOf(ctx); s != "delivery" {
				return "enqueued in " + s // a task's, in its handler's context
			}
			return link
		},
		Attempt: func(ctx context.Context, rec idempotency.InboxRecord, link string) (context.Context, func(idempotency.Result)) {
			o.mu.Lock()
			o.links[rec.EventID] = link
			o.mu.Unlock()
			return context.WithValue(ctx, scopeKey{}, rec.EventID), func(res idempotency.Result) {
				o.mu.Lock()
				defer o.mu.Unlock()
				o.attempts = append(o.attempts, res)
			}
		},
		Fetch: func(ctx context.Context, eventType, objectID string, d time.Duration, err error) {
			if d < 0 {
				panic("Fetch got a negative duration")
			}
			o.mu.Lock()
			defer o.mu.Unlock()
			o.fetches = append(o.fetches, observedFetch{eventType, objectID, err, scopeOf(ctx)})
		},
	}
}

// subscriptionEvent is a minimal customer.subscription.updated event about
// subscription sub.
func subscriptionEvent(t *testing.T, id, sub string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": "customer.subscription.updated", "created": 1756742400, "api_version": stripe.APIVersion,
		"data": map[string]any{"object": map[string]any{"id": sub, "object": "subscription"}},
	})
	require.NoError(t, err)
	return b
}

var errAPIDown = errors.New("stripe api down")

// fetchSubscription answers sub_gone with a 404 and sub_down with an error.
func fetchSubscription(_ context.Context, id, _ string) (*stripe.Subscription, error) {
	switch id {
	case "sub_gone":
		return nil, fmt.Errorf("%w: 404", idempotency.ErrObjectNotFound)
	case "sub_down":
		return nil, errAPIDown
	}
	return &stripe.Subscription{ID: id, Status: stripe.SubscriptionStatusActive}, nil
}

// TestObserverSynchronous: the synchronous Handler tells Observer.Delivery
// of every request, the rejected ones included, runs the handler in the
// context Delivery returned, gives done the Result OnResult got, and
// reports each fetch of an OnCurrent handler with its error.
func TestObserverSynchronous(t *testing.T) {
	t.Parallel()
	o := &observed{links: map[string]string{}}
	hs := idempotency.NewHandlers()
	var handlerScopes []string
	idempotency.OnCurrent(hs, []string{"customer.subscription.updated"}, fetchSubscription,
		func(ctx context.Context, _ idempotency.Tx, _ idempotency.Event[*stripe.Subscription]) error {
			handlerScopes = append(handlerScopes, scopeOf(ctx))
			return nil
		})
	var onResult []idempotency.Result
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(), Observer: o.observer("unused"),
		OnResult: func(r idempotency.Result) { onResult = append(onResult, r) },
	})
	require.NoError(t, err)
	for i, sub := range []string{"sub_ok", "sub_gone", "sub_down"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, idempotencytest.NewSignedRequest("/", subscriptionEvent(t, fmt.Sprintf("evt_obs_%d", i), sub), testSecret))
	}
	bad := idempotencytest.NewSignedRequest("/", subscriptionEvent(t, "evt_obs_bad", "sub_ok"), "whsec_other")
	h.ServeHTTP(httptest.NewRecorder(), bad)

	require.Equal(t, []string{"delivery"}, handlerScopes, "the handler runs in Delivery's context")
	require.Equal(t, onResult, o.deliveries, "done gets what OnResult got")
	var statuses []int
	for _, r := range o.deliveries {
		statuses = append(statuses, r.Status)
	}
	require.Equal(t, []int{200, 200, 500, 400}, statuses)
	require.Len(t, o.fetches, 3)
	for i, want := range []struct {
		id  string
		err error
	}{{"sub_ok", nil}, {"sub_gone", idempotency.ErrObjectNotFound}, {"sub_down", errAPIDown}} {
		f := o.fetches[i]
		require.Equal(t, "customer.subscription.updated", f.eventType)
		require.Equal(t, want.id, f.objectID)
		require.Equal(t, "delivery", f.scope, "Fetch gets the handler's context")
		if want.err == nil {
			require.NoError(t, f.err)
		} else {
			require.ErrorIs(t, f.err, want.err)
		}
	}
	require.Empty(t, o.attempts)
}

// TestObserverInbox: an inbox's Handler tells Delivery of each delivery
// and stores Link's text with the event, and a task its handler enqueues
// with Link's text in the attempt's context; each attempt, at an event or
// a task, is told to Attempt with that link, runs in the context Attempt
// returned (fetches included), and done gets its Result with the state it
// left the event in: dead_letter for the last failed attempt.
func TestObserverInbox(t *testing.T) {
	t.Parallel()
	o := &observed{links: map[string]string{}}
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	hs := idempotency.NewHandlers()
	receipt := idempotency.NewTask(hs, "receipt", func(context.Context, idempotency.TaskRun[string]) error { return nil })
	idempotency.OnCurrent(hs, []string{"customer.subscription.updated"}, fetchSubscription,
		func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Subscription]) error {
			if scopeOf(ctx) != ev.ID {
				return fmt.Errorf("the handler of %s runs in the context of %q", ev.ID, scopeOf(ctx))
			}
			_, err := receipt.Enqueue(ctx, tx, ev.Object.ID, "args")
			return err
		})
	in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{
		Logger: discardLogger(), Now: clock.Now, MaxAttempts: 2, Observer: o.observer("unused"),
	})
	require.NoError(t, err)
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Now: clock.Now, Observer: o.observer(traceparent)})
	require.NoError(t, err)
	for i, sub := range []string{"sub_ok", "sub_down"} {
		a := idempotencytest.Deliver(h, subscriptionEvent(t, fmt.Sprintf("evt_obi_%d", i), sub), testSecret)
		require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	}
	_, err = in.WorkDue(t.Context())
	require.NoError(t, err)
	clock.Advance(time.Hour)
	_, err = in.WorkDue(t.Context())
	require.NoError(t, err)

	o.mu.Lock()
	defer o.mu.Unlock()
	require.Len(t, o.deliveries, 2)
	require.Equal(t, idempotency.OutcomeQueued, o.deliveries[0].Outcome)
	require.Equal(t, map[string]string{"evt_obi_0": traceparent, "evt_obi_1": traceparent, "task:receipt:sub_ok": "enqueued in evt_obi_0"}, o.links)
	type end struct {
		id      string
		outcome idempotency.Outcome
		attempt int
		state   idempotency.InboxState
		kind    idempotency.InboxKind
	}
	var ends []end
	for _, r := range o.attempts {
		ends = append(ends, end{r.EventID, r.Outcome, r.Attempt, r.State, r.Kind})
	}
	require.ElementsMatch(t, []end{
		{"evt_obi_0", idempotency.OutcomeProcessed, 1, idempotency.InboxProcessed, ""},
		{"evt_obi_1", idempotency.OutcomeFailed, 1, idempotency.InboxFailed, ""},
		{"task:receipt:sub_ok", idempotency.OutcomeProcessed, 1, idempotency.InboxProcessed, idempotency.KindTask},
		{"evt_obi_1", idempotency.OutcomeFailed, 2, idempotency.InboxDeadLetter, ""},
	}, ends)
	var fetchScopes []string
	for _, f := range o.fetches {
		fetchScopes = append(fetchScopes, f.objectID+" in "+f.scope)
	}
	require.Equal(t, []string{"sub_ok in evt_obi_0", "sub_down in evt_obi_1", "sub_down in evt_obi_1"}, fetchScopes)
}

// TestObserverNil: a Handler and an Inbox without an Observer, or with one
// whose funcs are nil, work as before.
func TestObserverNil(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]*idempotency.Observer{"nil": nil, "empty": {}} {
		t.Run(name, func(t *testing.T) {
			hs := idempotency.NewHandlers()
			idempotency.OnCurrent(hs, []string{"customer.subscription.updated"}, fetchSubscription,
				func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Subscription]) error { return nil })
			store := idempotency.NewMemoryStore()
			h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Observer: o})
			require.NoError(t, err)
			a := idempotencytest.Deliver(h, subscriptionEvent(t, "evt_nil_1", "sub_ok"), testSecret)
			require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)

			in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger(), Observer: o})
			require.NoError(t, err)
			ih, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Observer: o})
			require.NoError(t, err)
			a = idempotencytest.Deliver(ih, subscriptionEvent(t, "evt_nil_2", "sub_ok"), testSecret)
			require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
			n, err := in.WorkDue(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, n)
			rec, _, err := store.LookupEvent(t.Context(), "evt_nil_2")
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeProcessed, rec.Outcome)
		})
	}
}

// doneCounter is an Observer whose every done counts its calls, so that a
// test sees each delivery and attempt ended exactly once.
type doneCounter struct {
	mu      sync.Mutex
	started int
	calls   []int                // calls of each started done
	results []idempotency.Result // the Result of each first call
}

func (c *doneCounter) start() func(idempotency.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := c.started
	c.started++
	c.calls = append(c.calls, 0)
	c.results = append(c.results, idempotency.Result{})
	return func(res idempotency.Result) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.calls[i]++
		if c.calls[i] == 1 {
			c.results[i] = res
		}
	}
}

func (c *doneCounter) observer() *idempotency.Observer {
	return &idempotency.Observer{
		Delivery: func(ctx context.Context, _ *http.Request) (context.Context, func(idempotency.Result)) {
			return ctx, c.start()
		},
		Attempt: func(ctx context.Context, _ idempotency.InboxRecord, _ string) (context.Context, func(idempotency.Result)) {
			return ctx, c.start()
		},
	}
}

// requireOnce fails unless every done started was called exactly once,
// and returns their Results.
func (c *doneCounter) requireOnce(t *testing.T, started int) []idempotency.Result {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Equal(t, started, c.started)
	for i, n := range c.calls {
		require.Equal(t, 1, n, "done %d was called %d times", i, n)
	}
	return append([]idempotency.Result(nil), c.results...)
}

// TestObserverDoneOnceOnEveryEnd: Delivery's and Attempt's done are called
// exactly once, with the Result OnResult gets, however a delivery or an
// attempt ends: rejected, a handler that panics or outlives its timeout, a
// store that cannot be reached, a task that panics.
func TestObserverDoneOnceOnEveryEnd(t *testing.T) {
	t.Parallel()
	c := &doneCounter{}
	var onResult []idempotency.Result
	var mu sync.Mutex
	record := func(r idempotency.Result) {
		mu.Lock()
		defer mu.Unlock()
		onResult = append(onResult, r)
	}
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[map[string]any]) error {
		panic("handler bug")
	})
	idempotency.On(hs, "invoice.updated", func(ctx context.Context, _ idempotency.Tx, _ idempotency.Event[map[string]any]) error {
		<-ctx.Done()
		return ctx.Err()
	})
	crash := idempotency.NewTask(hs, "crash", func(context.Context, idempotency.TaskRun[string]) error { panic("task bug") })
	idempotency.On(hs, "invoice.finalized", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[map[string]any]) error {
		_, err := crash.Enqueue(ctx, tx, ev.ID, "args")
		return err
	})
	event := func(id, typ string) []byte {
		return []byte(`{"id":"` + id + `","object":"event","type":"` + typ + `","created":1756742400,"data":{"object":{"id":"in_1","object":"invoice"}}}`)
	}
	// evt_slow's handler waits out Timeout; the claims before the handlers
	// must beat it, which 50 ms did not always on a loaded machine.
	cfg := idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Observer: c.observer(), OnResult: record, Timeout: time.Second}
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, cfg)
	require.NoError(t, err)
	down, err := idempotency.NewHandler(unavailableStore{}, hs, cfg)
	require.NoError(t, err)

	statuses := []int{
		idempotencytest.Deliver(h, event("evt_panic", "invoice.paid"), testSecret).Status,
		idempotencytest.Deliver(h, event("evt_slow", "invoice.updated"), testSecret).Status,
		idempotencytest.Deliver(h, event("evt_forged", "invoice.paid"), "whsec_forged").Status,
		idempotencytest.Deliver(down, event("evt_down", "invoice.paid"), testSecret).Status,
	}
	get := httptest.NewRecorder()
	h.ServeHTTP(get, httptest.NewRequest(http.MethodGet, "/", nil))
	statuses = append(statuses, get.Code)
	require.Equal(t, []int{500, 500, 400, 503, 405}, statuses)

	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{
		Logger: discardLogger(), Now: clock.Now, MaxAttempts: 1, Observer: c.observer(), OnResult: record,
	})
	require.NoError(t, err)
	// The deliveries are not watched here (an empty Observer, not the
	// inbox's): the attempts are.
	ih, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Now: clock.Now, Observer: &idempotency.Observer{}})
	require.NoError(t, err)
	for id, typ := range map[string]string{"evt_in_panic": "invoice.paid", "evt_in_task": "invoice.finalized"} {
		require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(ih, event(id, typ), testSecret).Outcome)
	}
	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 3, n, "two events and the task one of them enqueued")

	results := c.requireOnce(t, 8)
	mu.Lock()
	defer mu.Unlock()
	require.ElementsMatch(t, onResult, results, "done gets what OnResult got")
	type end struct {
		outcome idempotency.Outcome
		state   idempotency.InboxState
	}
	ends := map[string]end{}
	for _, r := range results[5:] {
		ends[r.EventID] = end{r.Outcome, r.State}
	}
	require.Equal(t, map[string]end{
		"evt_in_panic":           {idempotency.OutcomeFailed, idempotency.InboxDeadLetter},
		"evt_in_task":            {idempotency.OutcomeProcessed, idempotency.InboxProcessed},
		"task:crash:evt_in_task": {idempotency.OutcomeFailed, idempotency.InboxDeadLetter},
	}, ends)
}
