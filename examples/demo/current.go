package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// fakeStripeAPI stands in for the Stripe API, in the process: it answers
// GET of the objects it holds, by path (/v1/subscriptions/sub_...), 404
// for any other, and counts the requests. The demo reaches it through a
// real stripe-go client.
type fakeStripeAPI struct {
	mu       sync.Mutex
	objects  map[string]map[string]any
	requests int
}

func (a *fakeStripeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.requests++
	obj, ok := a.objects[r.URL.Path]
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodGet || !ok {
		w.WriteHeader(http.StatusNotFound)
		obj = map[string]any{"error": map[string]string{"type": "invalid_request_error", "code": "resource_missing", "message": "No such object"}}
	}
	_ = json.NewEncoder(w).Encode(obj)
}

// set makes the object at path obj.
func (a *fakeStripeAPI) set(path string, obj map[string]any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.objects[path] = obj
}

// calls returns how many requests the API has answered.
func (a *fakeStripeAPI) calls() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.requests
}

// localCopy is the service's copy of Stripe objects, one field of each by
// id, written when the transaction commits.
type localCopy struct {
	mu sync.Mutex
	m  map[string]string
}

func (l *localCopy) set(tx idempotency.Tx, id, value string) {
	tx.AfterCommit(func(context.Context) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.m[id] = value
	})
}

func (l *localCopy) get(id string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[id]
}

// stripeEvent returns a compact event of type typ about object, created at
// created.
func stripeEvent(id, typ string, created time.Time, object map[string]any) ([]byte, error) {
	return json.Marshal(map[string]any{
		"id": id, "object": "event", "api_version": stripe.APIVersion, "created": created.Unix(), "livemode": false,
		"type": typ, "data": map[string]any{"object": object},
	})
}

// runCurrent shows OnCurrent and CheckOrder against a fake Stripe API in
// the process: a subscription whose events arrive in reverse order, in the
// synchronous and the inbox mode, and a customer applied from its payloads
// with the order guard.
func runCurrent(w io.Writer) error {
	ctx := context.Background()
	api := &fakeStripeAPI{objects: map[string]map[string]any{}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	client := stripe.NewClient("sk_test_demo", stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL:               stripe.String(srv.URL),
		HTTPClient:        srv.Client(),
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})))
	discard := slog.New(slog.DiscardHandler)
	cfg := idempotency.Config{Secrets: []string{secret}, Logger: discard}

	// sub_demo was created incomplete and activated in the same second,
	// and its renewal failed a month later: the API says past_due.
	t0 := time.Date(2025, 9, 1, 16, 0, 0, 0, time.UTC)
	api.set("/v1/subscriptions/sub_demo", map[string]any{"id": "sub_demo", "object": "subscription", "status": "past_due"})
	type subEvent struct{ id, typ, status string }
	reversed := []subEvent{ // as Stripe delivers them
		{"evt_demo_sub_3", "customer.subscription.updated", "past_due"},
		{"evt_demo_sub_2", "customer.subscription.updated", "active"},
		{"evt_demo_sub_1", "customer.subscription.created", "incomplete"},
	}
	created := map[string]time.Time{"evt_demo_sub_1": t0, "evt_demo_sub_2": t0, "evt_demo_sub_3": t0.AddDate(0, 1, 0)}
	payloads := make([][]byte, len(reversed))
	for i, e := range reversed {
		var err error
		payloads[i], err = stripeEvent(e.id, e.typ, created[e.id], map[string]any{"id": "sub_demo", "object": "subscription", "status": e.status})
		if err != nil {
			return err
		}
	}

	// newService registers the projection of subscriptions: every event
	// refetches the subscription and writes what the API returns.
	newService := func() (*idempotency.Handlers, *localCopy) {
		local := &localCopy{m: map[string]string{}}
		hs := idempotency.NewHandlers()
		idempotency.OnCurrent(hs,
			[]string{"customer.subscription.created", "customer.subscription.updated", "customer.subscription.deleted"},
			idempotency.Retrieve(client.V1Subscriptions.Retrieve),
			func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Subscription]) error {
				local.set(tx, ev.Object.ID, string(ev.Object.Status))
				return nil
			})
		return hs, local
	}

	fmt.Fprintln(w, "Current state: refetch, don't trust the payload (OnCurrent; a fake Stripe API in the process, via stripe-go)")
	fmt.Fprintln(w, "13. sub_demo was created incomplete and activated in the same second, and went past_due a month later:")
	fmt.Fprintln(w, "    the API says past_due. The synchronous handler gets the three events in reverse order")
	hs, local := newService()
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, cfg)
	if err != nil {
		return err
	}
	before := api.calls()
	for i, e := range reversed {
		a := idempotencytest.Deliver(h, payloads[i], secret)
		fmt.Fprintf(w, "   %s %-29s %-20s -> %d %s   local: %s\n", e.id, e.typ, "(payload "+e.status+")", a.Status, a.Body, local.get("sub_demo"))
	}
	fmt.Fprintf(w, "   3 events, %s (each came after the fetch before it); the payloads in arrival order would have left %s\n",
		plural(api.calls()-before, "fetch"), reversed[len(reversed)-1].status)

	fmt.Fprintln(w, "14. the same three events in inbox mode: stored at once, then applied by a worker (WorkDue)")
	hs, local = newService()
	inbox, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{Logger: discard})
	if err != nil {
		return err
	}
	qh, err := inbox.Handler(cfg)
	if err != nil {
		return err
	}
	before = api.calls()
	for i, e := range reversed {
		a := idempotencytest.Deliver(qh, payloads[i], secret)
		fmt.Fprintf(w, "   %s -> %d %s\n", e.id, a.Status, a.Body)
	}
	n, err := inbox.WorkDue(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   worker: %d events, %s (made after all three were received)   local: %s\n",
		n, plural(api.calls()-before, "fetch"), local.get("sub_demo"))

	return runCheckOrder(w, client, api)
}

// runCheckOrder shows the order guard on a customer whose email is applied
// from the payloads: a newer event is applied, an older one skipped, and
// on a tie in the same second the customer is fetched.
func runCheckOrder(w io.Writer, client *stripe.Client, api *fakeStripeAPI) error {
	t0 := time.Date(2025, 9, 1, 16, 0, 0, 0, time.UTC)
	// The email changed three times: to b@ at :05, to c@ and to d@ both
	// at :10. The API has the last one.
	api.set("/v1/customers/cus_demo", map[string]any{"id": "cus_demo", "object": "customer", "email": "d@example.com"})
	local := &localCopy{m: map[string]string{}}
	fetchCustomer := idempotency.Retrieve(client.V1Customers.Retrieve)
	var did string // what the handler did with the last event
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "customer.updated", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Customer]) error {
		order, err := idempotency.CheckOrder(ctx, tx, "customer", ev.Object.ID, ev.Created)
		if err != nil {
			return err
		}
		cus := ev.Object
		switch order {
		case idempotency.OrderNewer:
			did = "newer: payload applied"
		case idempotency.OrderOlder:
			did = "older: stale, skipped"
			return idempotency.Skip("an event created later was applied")
		case idempotency.OrderTie:
			// The same second as the newest applied: neither payload is
			// known to be the later state, so ask the API.
			if cus, err = fetchCustomer(ctx, ev.Object.ID, ev.Account); err != nil {
				return err
			}
			did = "tie: fetched, API's applied"
		}
		local.set(tx, cus.ID, cus.Email)
		return nil
	})
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{Secrets: []string{secret}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}

	before := api.calls()
	fmt.Fprintln(w, "15. CheckOrder, for an object applied from its payloads: cus_demo's email became b@ at 16:00:05, then c@")
	fmt.Fprintln(w, "    and d@ both at 16:00:10; the API says d@. The events arrive d@, b@, c@")
	for _, e := range []struct {
		id    string
		sec   int
		email string
	}{{"evt_demo_cus_d", 10, "d@example.com"}, {"evt_demo_cus_b", 5, "b@example.com"}, {"evt_demo_cus_c", 10, "c@example.com"}} {
		payload, err := stripeEvent(e.id, "customer.updated", t0.Add(time.Duration(e.sec)*time.Second),
			map[string]any{"id": "cus_demo", "object": "customer", "email": e.email})
		if err != nil {
			return err
		}
		a := idempotencytest.Deliver(h, payload, secret)
		fmt.Fprintf(w, "   %s 16:00:%02d %s -> %d %-24s %-28s local: %s\n", e.id, e.sec, e.email, a.Status, a.Body, did, local.get("cus_demo"))
	}
	fmt.Fprintf(w, "   3 events, %s: the tie's, which kept d@ where c@'s payload would have gone back\n", plural(api.calls()-before, "fetch"))
	return nil
}

// plural is "1 fetch", "3 fetches".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ses", n, noun)
}
