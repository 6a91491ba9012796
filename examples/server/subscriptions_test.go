package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// fakeSub is a subscription as the fake Stripe API has it now.
type fakeSub struct {
	Customer  string
	Status    string
	PeriodEnd int64 // its one item's current_period_end
}

// fakeCall is one request the fake Stripe API answered.
type fakeCall struct {
	ID            string // the subscription id in the path
	Account       string // Stripe-Account; empty for the platform
	Authorization string
	Status        int
}

// fakeStripe is a fake of the Stripe API's GET /v1/subscriptions/{id} in
// the test's process: subscriptions the test sets and changes, 404 for an
// id it does not know, error answers the test queues, and a log of every
// request. The server reaches it through the stripe-go client it builds
// for the real API (newStripeClient).
type fakeStripe struct {
	srv *httptest.Server

	mu    sync.Mutex
	subs  map[string]fakeSub
	fail  []int // statuses answered to the next requests, in turn
	calls []fakeCall
}

const fakeKey = "sk_test_fake_key_never_logged"

func newFakeStripe(t *testing.T) *fakeStripe {
	t.Helper()
	f := &fakeStripe{subs: map[string]fakeSub{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/subscriptions/{id}", f.retrieve)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeStripe) retrieve(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	f.mu.Lock()
	c := fakeCall{ID: id, Account: r.Header.Get("Stripe-Account"), Authorization: r.Header.Get("Authorization"), Status: http.StatusOK}
	sub, known := f.subs[id]
	switch {
	case len(f.fail) > 0:
		c.Status, f.fail = f.fail[0], f.fail[1:]
	case !known:
		c.Status = http.StatusNotFound
	}
	f.calls = append(f.calls, c)
	f.mu.Unlock()

	var body any
	switch c.Status {
	case http.StatusOK:
		body = map[string]any{
			"id": id, "object": "subscription", "customer": sub.Customer, "status": sub.Status,
			"items": map[string]any{"object": "list", "data": []any{map[string]any{
				"id": "si_" + strings.TrimPrefix(id, "sub_"), "object": "subscription_item", "current_period_end": sub.PeriodEnd,
			}}},
		}
	case http.StatusNotFound:
		body = map[string]any{"error": map[string]string{
			"type": "invalid_request_error", "code": "resource_missing", "message": "No such subscription: '" + id + "'"}}
	default:
		body = map[string]any{"error": map[string]string{"type": "api_error", "message": "Something went wrong on Stripe's end"}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(c.Status)
	_ = json.NewEncoder(w).Encode(body)
}

// set makes the API's subscription id s.
func (f *fakeStripe) set(id string, s fakeSub) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs[id] = s
}

// failNext answers the next requests with these statuses, one each.
func (f *fakeStripe) failNext(statuses ...int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = append(f.fail, statuses...)
}

// callsOf returns the requests made for subscription id, in order.
func (f *fakeStripe) callsOf(id string) []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeCall
	for _, c := range f.calls {
		if c.ID == id {
			out = append(out, c)
		}
	}
	return out
}

// client is the server's stripe-go client pointed at the fake.
func (f *fakeStripe) client(t *testing.T) *stripe.Client {
	t.Helper()
	c, err := newStripeClient(fakeKey, f.srv.URL)
	require.NoError(t, err)
	return c
}

// The seconds the events of these tests are created at.
const (
	subCreated   = 1767225600 // 2026-01-01T00:00:00Z
	subPeriodEnd = 1769904000 // 2026-02-01T00:00:00Z
)

// subscriptionEvent is an event of type typ about subscription sub, of the
// connected account account when not empty. Its payload shows
// payloadStatus, a state the fake API never has in these tests, so that a
// row written from a payload shows.
func subscriptionEvent(t *testing.T, id, typ, sub, account string, created int64, payloadStatus string) []byte {
	t.Helper()
	ev := map[string]any{
		"id": id, "object": "event", "type": typ, "created": created, "api_version": stripe.APIVersion, "livemode": false,
		"data": map[string]any{"object": map[string]any{
			"id": sub, "object": "subscription", "customer": "cus_payload", "status": payloadStatus,
		}},
	}
	if account != "" {
		ev["account"] = account
	}
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	return b
}

// serveSubscriptions serves the example (newServer) on a new store of kind
// with the fake as its Stripe API; it does not run the inbox's workers.
func serveSubscriptions(t *testing.T, kind string, inboxMode bool) (client, *idempotency.Inbox, *fakeStripe) {
	t.Helper()
	svc, api := subscriptionStore(t, kind)
	c, inbox, _ := serve(t, svc, inboxMode, idempotency.InboxConfig{})
	return c, inbox, api
}

// subscriptionStore is a new store of kind whose Stripe API is a new
// fake, and the fake.
func subscriptionStore(t *testing.T, kind string) (service, *fakeStripe) {
	t.Helper()
	api := newFakeStripe(t)
	svc := newStore(t, kind)
	svc.stripe = api.client(t)
	return svc, api
}

// requireSubscription requires GET /subscriptions/{id} to show the fake
// API's state s.
func (c client) requireSubscription(id string, s fakeSub) {
	c.t.Helper()
	status, body := c.get("/subscriptions/" + id)
	require.Equal(c.t, http.StatusOK, status, body)
	var got map[string]any
	require.NoError(c.t, json.Unmarshal([]byte(body), &got))
	require.NotEmpty(c.t, got["updated_at"], body)
	delete(got, "updated_at")
	want, err := json.Marshal(map[string]any{
		"id": id, "customer": s.Customer, "status": s.Status,
		"current_period_end": stripeTime(s.PeriodEnd),
	})
	require.NoError(c.t, err)
	gotJSON, err := json.Marshal(got)
	require.NoError(c.t, err)
	require.JSONEq(c.t, string(want), string(gotJSON))
}

// stripeTime is the RFC 3339 form of a Stripe timestamp.
func stripeTime(sec int64) string { return time.Unix(sec, 0).UTC().Format(time.RFC3339) }

func (c client) requireNoSubscription(id string) {
	c.t.Helper()
	status, body := c.get("/subscriptions/" + id)
	require.Equal(c.t, http.StatusNotFound, status, body)
}

// deliverAll delivers each payload in turn and requires want: processed
// in synchronous mode, queued in inbox mode.
func (c client) deliverAll(want idempotency.Outcome, payloads ...[]byte) {
	c.t.Helper()
	for i, p := range payloads {
		status, body := c.deliver(p)
		require.Equal(c.t, http.StatusOK, status, "delivery %d: %s", i, body)
		require.Equal(c.t, fmt.Sprintf(`{"outcome":"%s"}`, want), body, "delivery %d", i)
	}
}

// TestSubscriptionsOutOfOrder: a subscription created, updated and
// canceled in one second, its three events delivered in reverse order, in
// both modes on both stores. The row is the API's final state, where the
// payloads applied in arrival order would leave the created event's; the
// synchronous handler fetches once per delivery (each arrives after the
// fetch before it), the inbox's worker once for the three. A subscription
// the API does not know is skipped and gets no row.
func TestSubscriptionsOutOfOrder(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		for _, mode := range []string{"sync", "inbox"} {
			t.Run(kind+"/"+mode, func(t *testing.T) {
				t.Parallel()
				inboxMode := mode == "inbox"
				c, inbox, api := serveSubscriptions(t, kind, inboxMode)

				final := fakeSub{Customer: "cus_rev", Status: "canceled", PeriodEnd: subPeriodEnd}
				api.set("sub_rev", final)
				events := [][]byte{
					subscriptionEvent(t, "evt_rev_3", "customer.subscription.deleted", "sub_rev", "", subCreated, "canceled"),
					subscriptionEvent(t, "evt_rev_2", "customer.subscription.updated", "sub_rev", "", subCreated, "active"),
					subscriptionEvent(t, "evt_rev_1", "customer.subscription.created", "sub_rev", "", subCreated, "incomplete"),
				}
				unknown := subscriptionEvent(t, "evt_unknown", "customer.subscription.updated", "sub_unknown", "", subCreated, "active")
				if inboxMode {
					c.deliverAll(idempotency.OutcomeQueued, append(events, unknown)...)
					n, err := inbox.WorkDue(t.Context())
					require.NoError(t, err)
					require.Equal(t, 4, n)
					require.Len(t, api.callsOf("sub_rev"), 1, "one fetch for the three stored events")
					rec, _, err := inbox.Lookup(t.Context(), "evt_unknown")
					require.NoError(t, err)
					require.Equal(t, idempotency.InboxSkipped, rec.State)
				} else {
					c.deliverAll(idempotency.OutcomeProcessed, events...)
					require.Len(t, api.callsOf("sub_rev"), 3, "each delivery came after the fetch before it")
					c.deliverAll(idempotency.OutcomeSkipped, unknown)
				}
				c.requireSubscription("sub_rev", final)
				require.Len(t, api.callsOf("sub_unknown"), 1)
				c.requireNoSubscription("sub_unknown")
			})
		}
	}
}

// TestSubscriptionsInboxStormFetchesOnce: 50 updates of one subscription
// stored at once in inbox mode cost one fetch: the worker's fetch came
// after every one of them was received, so it stands for all 50.
func TestSubscriptionsInboxStormFetchesOnce(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			c, inbox, api := serveSubscriptions(t, kind, true)
			final := fakeSub{Customer: "cus_storm", Status: "past_due", PeriodEnd: subPeriodEnd}
			api.set("sub_storm", final)

			const events = 50
			var wg sync.WaitGroup
			answers := make([]string, events)
			for i := range events {
				payload := subscriptionEvent(t, fmt.Sprintf("evt_storm_%02d", i), "customer.subscription.updated", "sub_storm", "",
					subCreated+int64(i%5), "active")
				wg.Go(func() { _, answers[i] = c.deliver(payload) })
			}
			wg.Wait()
			for i, a := range answers {
				require.Equal(t, `{"outcome":"queued"}`, a, "delivery %d", i)
			}
			n, err := inbox.WorkDue(t.Context())
			require.NoError(t, err)
			require.Equal(t, events, n)
			require.Len(t, api.callsOf("sub_storm"), 1, "one fetch for the whole storm")
			st := c.inboxStats()
			require.Equal(t, events, st.Counts["processed"])
			c.requireSubscription("sub_storm", final)
		})
	}
}

// TestSubscriptionsFetchFailureSync: when the API answers 500, the
// synchronous delivery is answered 503 stripe_unavailable and nothing is
// written, so Stripe sends it again; the redelivery fetches and writes
// the row.
func TestSubscriptionsFetchFailureSync(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			c, _, api := serveSubscriptions(t, kind, false)
			state := fakeSub{Customer: "cus_err", Status: "active", PeriodEnd: subPeriodEnd}
			api.set("sub_err", state)
			ev := subscriptionEvent(t, "evt_err", "customer.subscription.updated", "sub_err", "", subCreated, "past_due")

			api.failNext(http.StatusInternalServerError)
			status, body := c.deliver(ev)
			require.Equal(t, http.StatusServiceUnavailable, status, body)
			require.Equal(t, `{"error":"stripe_unavailable"}`, body)
			c.requireNoSubscription("sub_err")

			c.deliverAll(idempotency.OutcomeProcessed, ev) // Stripe's retry
			c.requireSubscription("sub_err", state)
			calls := api.callsOf("sub_err")
			require.Len(t, calls, 2)
			require.Equal(t, http.StatusInternalServerError, calls[0].Status)
		})
	}
}

// TestRunWithoutStripeKey: without STRIPE_SECRET_KEY the server serves
// invoices as before, answers subscription events ignored, and says why
// at start.
func TestRunWithoutStripeKey(t *testing.T) {
	t.Parallel()
	stderr := newLogWatch("subscription events are ignored")
	c := startServerEnv(t, nil, stderr)
	select {
	case <-stderr.matched:
	default:
		t.Fatalf("no start-up line about subscription events:\n%s", stderr)
	}
	require.Contains(t, stderr.String(), "STRIPE_SECRET_KEY is not set")
	c.deliverAll(idempotency.OutcomeIgnored,
		subscriptionEvent(t, "evt_nokey", "customer.subscription.updated", "sub_nokey", "", subCreated, "active"))
	c.requireNoSubscription("sub_nokey")
	c.deliverAll(idempotency.OutcomeProcessed, invoiceEvent(t, "invoice.paid", "evt_nokey_inv", "acct_nokey"))
}

// TestRunFetchesAsTheConnectedAccount runs the server as configured in
// production, with the key in STRIPE_SECRET_KEY and -stripe-api-base
// pointing at the fake, on both stores: an event of a connected account is
// fetched with its Stripe-Account, a platform event without one, both with
// the key, and the key is in no log line.
func TestRunFetchesAsTheConnectedAccount(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			api := newFakeStripe(t)
			args := []string{"-stripe-api-base", api.srv.URL}
			if kind == "postgres" {
				args = append(args, "-database-url", pgtest.New(t).URL)
			}
			stderr := newLogWatch("stripe_api=")
			c := startServerEnv(t, map[string]string{"STRIPE_SECRET_KEY": fakeKey}, stderr, args...)
			connected := fakeSub{Customer: "cus_connected", Status: "trialing", PeriodEnd: subPeriodEnd}
			platform := fakeSub{Customer: "cus_platform", Status: "active", PeriodEnd: subPeriodEnd + 86400}
			api.set("sub_connected", connected)
			api.set("sub_platform", platform)

			c.deliverAll(idempotency.OutcomeProcessed,
				subscriptionEvent(t, "evt_connect", "customer.subscription.created", "sub_connected", "acct_1Connected", subCreated, "incomplete"),
				subscriptionEvent(t, "evt_platform", "customer.subscription.created", "sub_platform", "", subCreated, "incomplete"))
			c.requireSubscription("sub_connected", connected)
			c.requireSubscription("sub_platform", platform)

			calls := append(api.callsOf("sub_connected"), api.callsOf("sub_platform")...)
			require.Len(t, calls, 2)
			require.Equal(t, "acct_1Connected", calls[0].Account, "a connected account's subscription was fetched as the platform")
			require.Empty(t, calls[1].Account, "the platform's subscription was fetched with Stripe-Account")
			for _, call := range calls {
				require.Equal(t, "Bearer "+fakeKey, call.Authorization)
			}
			log := stderr.String()
			require.Contains(t, log, "stripe_api="+api.srv.URL)
			require.NotContains(t, log, fakeKey)
		})
	}
}

// TestRunRejectsBadStripeConfig: a key that is not an API key and a base
// URL that is not one end start-up with an error that does not repeat the
// key.
func TestRunRejectsBadStripeConfig(t *testing.T) {
	t.Parallel()
	const notAKey = "whsec_pasted_by_mistake"
	env := func(k string) string {
		if k == "STRIPE_SECRET_KEY" {
			return notAKey
		}
		return ""
	}
	err := runRefused(t, []string{"-secret", secret}, env, newLogWatch(""))
	require.ErrorContains(t, err, "STRIPE_SECRET_KEY is not a secret")
	require.NotContains(t, err.Error(), notAKey)

	err = runRefused(t, []string{"-secret", secret, "-stripe-api-base", "localhost:12111"},
		func(k string) string { return map[string]string{"STRIPE_SECRET_KEY": fakeKey}[k] }, newLogWatch(""))
	require.ErrorContains(t, err, "-stripe-api-base")
	require.NotContains(t, err.Error(), fakeKey)
}
