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
			if scopeOf(ctx) != "delivery" {
				return "not the delivery's context"
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
// and stores Link's text with the event; each attempt, at an event or a
// task, is told to Attempt with that link, runs in the context Attempt
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
	require.Equal(t, map[string]string{"evt_obi_0": traceparent, "evt_obi_1": traceparent, "task:receipt:sub_ok": ""}, o.links)
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
