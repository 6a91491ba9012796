package idempotencytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

// currentTests are the guarantees of idempotency.OnCurrent (the object is
// refetched under a per-object lock, and a fetch made after an event was
// received stands for it) and of idempotency.CheckOrder, run by
// RunStoreTests. The OnCurrent cases fetch through a real stripe-go client
// and idempotency.Retrieve from a fake Stripe API whose objects the test
// changes; they use the synchronous Handler and, on stores with an inbox,
// the inbox with a fake clock and WorkDue.
var currentTests = []struct {
	name string
	fn   func(t *testing.T, b StoreBackend)
}{
	{"CurrentOneObjectAtATime", testCurrentObjectLock},
	{"CurrentReleaseThatAddsATypeSharesTheLock", testCurrentReleaseAddsType},
	{"CurrentReleaseThatAddsAKindSharesTheLock", testCurrentReleaseAddsKind},
	{"CurrentInboxStormFetchesOnce", testCurrentInboxStorm},
	{"CurrentNewerStateIsFetched", testCurrentNewerState},
	{"CurrentRolledBackFetchDoesNotCount", testCurrentRolledBackFetch},
	{"CurrentReverseOrderSameSecondSync", func(t *testing.T, b StoreBackend) { testCurrentReverseOrder(t, b, false) }},
	{"CurrentReverseOrderSameSecondInbox", func(t *testing.T, b StoreBackend) { testCurrentReverseOrder(t, b, true) }},
	{"CurrentConcurrentSyncDeliveries", testCurrentConcurrentSync},
	{"CurrentFetchMarksOnlyItsObject", testCurrentFetchMarksOnlyItsObject},
	{"CurrentNotFoundIsSkipped", testCurrentNotFound},
	{"CurrentFetchErrorSync", testCurrentFetchErrorSync},
	{"CurrentFetchErrorInbox", testCurrentFetchErrorInbox},
	{"CurrentConnectAccount", testCurrentConnect},
	{"CheckOrderAnswers", testCheckOrderAnswers},
	{"CheckOrderKeysApart", testCheckOrderKeysApart},
	{"CheckOrderCommitsAndRollsBack", testCheckOrderTransactional},
	{"CheckOrderWaitsForHolderCommit", func(t *testing.T, b StoreBackend) { testCheckOrderWaits(t, b, nil) }},
	{"CheckOrderWaitsForHolderRollback", func(t *testing.T, b StoreBackend) { testCheckOrderWaits(t, b, errHandler) }},
	{"CheckOrderBadInput", testCheckOrderBadInput},
	{"CheckOrderDeadlockRetried", testCheckOrderDeadlockRetried},
}

// fakeSubscription is the state of a subscription at the fake Stripe API:
// its status, and a version the test bumps at each change (kept in
// metadata["version"]).
type fakeSubscription struct {
	Status  string
	Version int
}

// fakeAPICall is one request the fake Stripe API answered.
type fakeAPICall struct {
	Path    string
	ID      string // the subscription id in the path
	Account string // the Stripe-Account header; empty for the platform
	Header  http.Header
	Status  int              // the answer's status
	Sent    fakeSubscription // the state answered, read when the request arrived
}

// fakeAPIHold makes the next request for one object wait: arrived is
// closed when it has arrived (and read the object's state), and it is
// answered once release is closed.
type fakeAPIHold struct {
	arrived, release chan struct{}
}

// fakeStripeAPI is a stateful fake of the Stripe API's
// GET /v1/subscriptions/{id}: objects the test sets and changes, 404 for
// an id it does not know, error answers (429, 5xx) the test queues, a
// request the test holds, and a log of every request with its headers. It
// is used through a real stripe-go client (client), so that the
// idempotency.Retrieve adapter is exercised as in production.
type fakeStripeAPI struct {
	srv    *httptest.Server
	client *stripe.Client

	mu    sync.Mutex
	subs  map[string]fakeSubscription
	fail  []int // statuses answered to the next requests, in turn
	holds map[string]*fakeAPIHold
	calls []fakeAPICall
}

func newFakeStripeAPI(t *testing.T) *fakeStripeAPI {
	t.Helper()
	api := &fakeStripeAPI{subs: map[string]fakeSubscription{}, holds: map[string]*fakeAPIHold{}}
	api.srv = httptest.NewServer(http.HandlerFunc(api.serve))
	t.Cleanup(api.srv.Close)
	api.client = stripe.NewClient("sk_test_conformance", stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL:        stripe.String(api.srv.URL),
		HTTPClient: api.srv.Client(),
		// No retry, hence no sleep: each fetch is one request the test
		// counts, and an error answer reaches the handler at once.
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})))
	return api
}

func (api *fakeStripeAPI) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_fake")
	id, ok := strings.CutPrefix(r.URL.Path, "/v1/subscriptions/")
	if r.Method != http.MethodGet || !ok || id == "" || strings.Contains(id, "/") {
		WriteStripeError(w, http.StatusNotFound, "", "Unrecognized request URL")
		return
	}
	api.mu.Lock()
	c := fakeAPICall{Path: r.URL.Path, ID: id, Account: r.Header.Get("Stripe-Account"), Header: r.Header.Clone(), Status: http.StatusOK}
	sub, known := api.subs[id]
	switch {
	case len(api.fail) > 0:
		c.Status, api.fail = api.fail[0], api.fail[1:]
	case !known:
		c.Status = http.StatusNotFound
	default:
		c.Sent = sub
	}
	hold := api.holds[id]
	delete(api.holds, id)
	api.calls = append(api.calls, c)
	api.mu.Unlock()

	if hold != nil {
		close(hold.arrived)
		select {
		case <-hold.release:
		case <-r.Context().Done():
			return
		}
	}
	switch c.Status {
	case http.StatusOK:
		body, err := json.Marshal(map[string]any{
			"id": id, "object": "subscription", "status": sub.Status,
			"metadata": map[string]string{"version": strconv.Itoa(sub.Version)},
		})
		if err != nil {
			panic(err)
		}
		w.WriteHeader(c.Status)
		_, _ = w.Write(body)
	case http.StatusNotFound:
		WriteStripeError(w, c.Status, "resource_missing", "No such subscription: '"+id+"'")
	case http.StatusTooManyRequests:
		WriteStripeError(w, c.Status, "rate_limit", "Too many requests")
	case http.StatusForbidden:
		WriteStripeError(w, c.Status, "", "The provided key does not have the required permissions")
	default:
		WriteStripeError(w, c.Status, "", "Something went wrong on Stripe's end")
	}
}

func stripeErrorBody(typ, code, message string) []byte {
	return (&stripeError{Type: typ, Code: code, Message: message}).body()
}

// stripeError is the Stripe API's JSON error, as stripe-go reads it into
// a *stripe.Error: Param names the parameter refused.
type stripeError struct {
	Type    string `json:"type"`
	Code    string `json:"code,omitempty"`
	Param   string `json:"param,omitempty"`
	Message string `json:"message"`
}

// body is the answer's body: {"error":{...}}.
func (e *stripeError) body() []byte {
	b, err := json.Marshal(map[string]any{"error": e})
	if err != nil {
		panic(err)
	}
	return b
}

// set makes id known to the API with the given state.
func (api *fakeStripeAPI) set(id, status string, version int) {
	api.mu.Lock()
	defer api.mu.Unlock()
	api.subs[id] = fakeSubscription{Status: status, Version: version}
}

// failNext answers the next requests, whatever their object, with these
// statuses, one each.
func (api *fakeStripeAPI) failNext(statuses ...int) {
	api.mu.Lock()
	defer api.mu.Unlock()
	api.fail = append(api.fail, statuses...)
}

// hold makes the next request for id wait until release is closed.
func (api *fakeStripeAPI) hold(id string) (arrived <-chan struct{}, release chan<- struct{}) {
	h := &fakeAPIHold{arrived: make(chan struct{}), release: make(chan struct{})}
	api.mu.Lock()
	defer api.mu.Unlock()
	api.holds[id] = h
	return h.arrived, h.release
}

// callsOf returns the requests made for id, in arrival order.
func (api *fakeStripeAPI) callsOf(id string) []fakeAPICall {
	api.mu.Lock()
	defer api.mu.Unlock()
	var out []fakeAPICall
	for _, c := range api.calls {
		if c.ID == id {
			out = append(out, c)
		}
	}
	return out
}

// subscriptionEvents are the event types the bench registers with
// OnCurrent.
var subscriptionEvents = []string{"customer.subscription.created", "customer.subscription.updated", "customer.subscription.deleted"}

// subscriptionEvent is an event of type typ about subscription sub, of the
// connected account account when not empty, created at the given second.
// Its payload shows a state no fake object ever has (version 0 and the
// given status), so that a handler that was given the payload instead of
// the fetched object writes a state the test tells apart.
func subscriptionEvent(id, typ, sub, account string, created int64, payloadStatus string) []byte {
	ev := map[string]any{
		"id": id, "object": "event", "type": typ, "created": created, "api_version": stripe.APIVersion, "livemode": false,
		"data": map[string]any{"object": map[string]any{
			"id": sub, "object": "subscription", "status": payloadStatus, "metadata": map[string]string{"version": "0"},
		}},
	}
	if account != "" {
		ev["account"] = account
	}
	b, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	return b
}

// currentRow is the bench's local copy of a subscription.
type currentRow struct {
	Status  string
	Version int
	order   int // the write's place in the order of handler runs
}

// currentRun is one run of the bench's handler.
type currentRun struct {
	EventID, Account string
	Seen             fakeSubscription // the object the handler was given
}

// currentBench is a service that keeps a local copy of subscriptions with
// OnCurrent, fetching through a stripe-go client from a fake API. It has
// both Handlers (synchronous and inbox) on the backend's store and one
// fake clock.
//
// The local copy is a row per subscription that each handler run replaces
// with the object it was given. The row is kept in the process, replaced
// in tx.AfterCommit, and each handler run also adds 1 to the backend's
// counter "writes:<sub>" in the event's transaction: what commits is
// counted by the store. A row keeps the write of the latest handler run (in
// the order the runs started), whichever AfterCommit func runs last: runs
// of one object are serialised by the per-object lock, which
// CurrentOneObjectAtATime proves. (Reading the committed row inside a
// handler would need a second database connection per handler, which a
// pool full of waiting handlers cannot give.)
type currentBench struct {
	b     StoreBackend
	api   *fakeStripeAPI
	clock *Clock
	inbox *idempotency.Inbox // nil when the store has no inbox
	sync  http.Handler
	queue http.Handler
	hs    *idempotency.Handlers
	hcfg  idempotency.Config

	mu       sync.Mutex
	runCount int
	runs     []currentRun
	rows     map[string]currentRow
	fetches  []fakeAPICall // what the FetchFunc was asked: ID and Account
	fail     func(eventID string) error
}

const currentSecret = "whsec_conformance_current"

var currentStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newCurrentBench(t *testing.T, b StoreBackend) *currentBench {
	t.Helper()
	cb := &currentBench{b: b, api: newFakeStripeAPI(t), clock: NewClock(currentStart), rows: map[string]currentRow{}}
	retrieve := idempotency.Retrieve(cb.api.client.V1Subscriptions.Retrieve)
	fetch := func(ctx context.Context, id, account string) (*stripe.Subscription, error) {
		cb.mu.Lock()
		cb.fetches = append(cb.fetches, fakeAPICall{ID: id, Account: account})
		cb.mu.Unlock()
		return retrieve(ctx, id, account)
	}
	hs := idempotency.NewHandlers()
	idempotency.OnCurrent(hs, subscriptionEvents, fetch, cb.apply)
	logger := slog.New(slog.DiscardHandler)
	in, err := idempotency.NewInbox(b.Store, hs, idempotency.InboxConfig{
		Now: cb.clock.Now, Logger: logger, Backoff: func(int) time.Duration { return time.Minute }, Timeout: 20 * time.Second,
	})
	switch {
	case err != nil && b.NoInbox: // the synchronous cases still run
	case err != nil:
		require.NoError(t, err, noInboxHint)
	default:
		cb.inbox = in
	}
	// A timeout well above the suite's bounded waits: a delivery that a
	// test holds must not time out while the test looks at it.
	hcfg := idempotency.Config{Secrets: []string{currentSecret}, Logger: logger, Now: cb.clock.Now, Timeout: 20 * time.Second}
	cb.hs, cb.hcfg = hs, hcfg
	cb.sync, err = idempotency.NewHandler(b.Store, hs, hcfg)
	require.NoError(t, err)
	if cb.inbox != nil {
		cb.queue, err = cb.inbox.Handler(hcfg)
		require.NoError(t, err)
	}
	return cb
}

// apply is the handler of the subscription events: the object it is given
// replaces the local row.
func (cb *currentBench) apply(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Subscription]) error {
	sub := ev.Object
	if sub == nil {
		return errors.New("OnCurrent gave the handler no object")
	}
	version, err := strconv.Atoi(sub.Metadata["version"])
	if err != nil {
		return fmt.Errorf("metadata.version: %w", err)
	}
	seen := fakeSubscription{Status: string(sub.Status), Version: version}
	cb.mu.Lock()
	cb.runCount++
	order, fail := cb.runCount, cb.fail
	cb.runs = append(cb.runs, currentRun{EventID: ev.ID, Account: ev.Account, Seen: seen})
	cb.mu.Unlock()
	if err := cb.b.Add(ctx, tx, "writes:"+sub.ID, 1); err != nil {
		return err
	}
	if fail != nil {
		if err := fail(ev.ID); err != nil {
			return err
		}
	}
	tx.AfterCommit(func(context.Context) {
		cb.mu.Lock()
		defer cb.mu.Unlock()
		if r, ok := cb.rows[sub.ID]; !ok || order > r.order {
			cb.rows[sub.ID] = currentRow{Status: seen.Status, Version: seen.Version, order: order}
		}
	})
	return nil
}

func (cb *currentBench) needInbox(t *testing.T) {
	t.Helper()
	if cb.inbox == nil {
		t.Skip("the store does not support the inbox")
	}
}

func (cb *currentBench) setFail(fail func(eventID string) error) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	cb.fail = fail
}

// deliverSync delivers ev to the synchronous Handler and requires the
// answer.
func (cb *currentBench) deliverSync(t *testing.T, ev []byte, wantStatus int, want idempotency.Outcome) {
	t.Helper()
	a := Deliver(cb.sync, ev, currentSecret)
	require.Equal(t, wantStatus, a.Status, a.Body)
	require.Equal(t, want, a.Outcome, a.Body)
}

// deliverSyncAsync delivers ev to the synchronous Handler on another
// goroutine; the answer comes on the channel.
func (cb *currentBench) deliverSyncAsync(ev []byte) <-chan Answer {
	ch := make(chan Answer, 1)
	go func() { ch <- Deliver(cb.sync, ev, currentSecret) }()
	return ch
}

// store delivers ev to the inbox's Handler: it must be queued.
func (cb *currentBench) store(t *testing.T, ev []byte) {
	t.Helper()
	a := Deliver(cb.queue, ev, currentSecret)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
}

func (cb *currentBench) work(t *testing.T, want int) {
	t.Helper()
	n, err := cb.inbox.WorkDue(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, want, n, "attempts made by WorkDue")
}

func (cb *currentBench) inboxState(t *testing.T, id string) idempotency.InboxRecord {
	t.Helper()
	r, ok, err := cb.inbox.Lookup(ctxT(t), id)
	require.NoError(t, err)
	require.True(t, ok, "event %s is not in the inbox", id)
	return normalize(r)
}

// row returns the local row of sub, and false when none was committed.
func (cb *currentBench) row(sub string) (fakeSubscription, bool) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	r, ok := cb.rows[sub]
	return fakeSubscription{Status: r.Status, Version: r.Version}, ok
}

// requireRow requires the local row of sub to be the state want, with
// writes committed handler runs counted by the store.
func (cb *currentBench) requireRow(t *testing.T, sub string, want fakeSubscription, writes int) {
	t.Helper()
	got, ok := cb.row(sub)
	require.True(t, ok, "no local row of %s was committed", sub)
	require.Equal(t, want, got, "the local row of %s", sub)
	require.Equal(t, writes, cb.b.Get(t, "writes:"+sub), "handler runs of %s committed", sub)
}

// requireNoRow requires that nothing about sub was committed.
func (cb *currentBench) requireNoRow(t *testing.T, sub string) {
	t.Helper()
	_, ok := cb.row(sub)
	require.False(t, ok, "a local row of %s was committed", sub)
	require.Zero(t, cb.b.Get(t, "writes:"+sub), "handler runs of %s committed", sub)
}

// runsOf returns the handler runs of the events whose id has the prefix.
func (cb *currentBench) runsOf(prefix string) []currentRun {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	var out []currentRun
	for _, r := range cb.runs {
		if strings.HasPrefix(r.EventID, prefix) {
			out = append(out, r)
		}
	}
	return out
}

func (cb *currentBench) fetchesSnapshot() []fakeAPICall {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return slices.Clone(cb.fetches)
}

const (
	subUpdated = "customer.subscription.updated"
	subCreated = "customer.subscription.created"
	subDeleted = "customer.subscription.deleted"
	// currentCreated is the created second of the bench's events.
	currentCreated = 1772366400
)

// testCurrentObjectLock: while one event's handler holds subscription X
// (its fetch held at the API), a second event of X waits for the lock: it
// neither fetches nor runs its handler until the first has committed, and
// then fetches the state that changed meanwhile. An event of subscription
// Y is handled meanwhile.
func testCurrentObjectLock(t *testing.T, b StoreBackend) {
	cb := newCurrentBench(t, b)
	cb.api.set("sub_lock_x", "active", 1)
	cb.api.set("sub_lock_y", "active", 1)
	arrived, release := cb.api.hold("sub_lock_x")
	first := cb.deliverSyncAsync(subscriptionEvent("evt_lock_1", subUpdated, "sub_lock_x", "", currentCreated, "active"))
	receive(t, arrived, "the first event's fetch")
	// The object changes while the first fetch is in flight; its answer
	// was read when the request arrived, as the API's would be.
	cb.api.set("sub_lock_x", "past_due", 2)
	second := cb.deliverSyncAsync(subscriptionEvent("evt_lock_2", subUpdated, "sub_lock_x", "", currentCreated+1, "past_due"))
	waitingReaches(t, b, 1, waitLimit,
		"the second event of the object should wait for the first's lock")

	cb.deliverSync(t, subscriptionEvent("evt_y_meanwhile", subUpdated, "sub_lock_y", "", currentCreated, "active"), http.StatusOK, idempotency.OutcomeProcessed)
	cb.requireRow(t, "sub_lock_y", fakeSubscription{"active", 1}, 1)

	require.Len(t, cb.api.callsOf("sub_lock_x"), 1, "the waiting event fetched while the object was held")
	require.Empty(t, cb.runsOf("evt_lock_2"), "the waiting event's handler ran while the object was held")
	select {
	case a := <-second:
		t.Fatalf("the second event was answered while the first held the object: %d %s", a.Status, a.Body)
	default:
	}
	require.Equal(t, 1, b.Waiting(t), "the second event still waits")

	close(release)
	a := receive(t, first, "the first event's delivery")
	require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
	a = receive(t, second, "the second event's delivery, once the first ended,")
	require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)

	calls := cb.api.callsOf("sub_lock_x")
	require.Len(t, calls, 2, "the second event was received after the first fetch began: it fetches again")
	require.Equal(t, fakeSubscription{"active", 1}, calls[0].Sent)
	require.Equal(t, fakeSubscription{"past_due", 2}, calls[1].Sent)
	var order []string
	for _, r := range cb.runsOf("evt_lock_") {
		order = append(order, r.EventID)
	}
	// A store may run a transaction again after a serialization conflict:
	// the handler runs are in lock order, so the first event's come first.
	require.Equal(t, "evt_lock_1", order[0])
	require.Equal(t, "evt_lock_2", order[len(order)-1])
	require.NotContains(t, order[:len(order)-1], "evt_lock_2", "the second event's handler ran before the first's ended")
	cb.requireRow(t, "sub_lock_x", fakeSubscription{"past_due", 2}, 2)
	requireEvent(t, b, "evt_lock_1", idempotency.OutcomeProcessed)
	requireEvent(t, b, "evt_lock_2", idempotency.OutcomeProcessed)
}

// testCurrentInboxStorm: 50 updates of one subscription stored in the
// inbox, the object changed at the API after they were stored: the
// workers fetch it once, the local row is the API's final state, and every
// event is processed.
func testCurrentInboxStorm(t *testing.T, b StoreBackend) {
	cb := newCurrentBench(t, b)
	cb.needInbox(t)
	cb.api.set("sub_storm", "active", 1)
	const events = 50
	for i := range events {
		cb.store(t, subscriptionEvent(fmt.Sprintf("evt_storm_%02d", i), subUpdated, "sub_storm", "", currentCreated+int64(i%5), "active"))
	}
	cb.api.set("sub_storm", "past_due", 2)
	cb.work(t, events)
	require.Len(t, cb.api.callsOf("sub_storm"), 1, "one fetch stands for every event stored before it")
	cb.requireRow(t, "sub_storm", fakeSubscription{"past_due", 2}, 1)
	for i := range events {
		id := fmt.Sprintf("evt_storm_%02d", i)
		require.Equal(t, idempotency.InboxProcessed, cb.inboxState(t, id).State, id)
		requireEvent(t, b, id, idempotency.OutcomeProcessed)
	}
	cb.work(t, 0)
}

// testCurrentFetchMarksOnlyItsObject: a fetch stands for the events of
// its own object only. An event of another object of the same
// registration, stored before that fetch, still fetches its own object
// and writes its newer state.
func testCurrentFetchMarksOnlyItsObject(t *testing.T, b StoreBackend) {
	cb := newCurrentBench(t, b)
	cb.needInbox(t)
	cb.api.set("sub_mark_x", "active", 1)
	cb.store(t, subscriptionEvent("evt_mark_x1", subUpdated, "sub_mark_x", "", currentCreated, "active"))
	cb.work(t, 1)
	cb.requireRow(t, "sub_mark_x", fakeSubscription{"active", 1}, 1)

	cb.api.set("sub_mark_a", "active", 1)
	cb.api.set("sub_mark_x", "past_due", 2)
	// Due together on the inbox's clock, applied in event id order: the
	// fetch of sub_mark_a comes after evt_mark_x2 was stored.
	cb.store(t, subscriptionEvent("evt_mark_a1", subUpdated, "sub_mark_a", "", currentCreated+1, "active"))
	cb.store(t, subscriptionEvent("evt_mark_x2", subUpdated, "sub_mark_x", "", currentCreated+1, "past_due"))
	cb.work(t, 2)
	cb.requireRow(t, "sub_mark_a", fakeSubscription{"active", 1}, 1)
	require.Len(t, cb.api.callsOf("sub_mark_x"), 2, "the fetch of sub_mark_a does not stand for sub_mark_x's event")
	cb.requireRow(t, "sub_mark_x", fakeSubscription{"past_due", 2}, 2)
}

// testCurrentNewerState: coalescing never loses a newer state. An event
// received after a fetch was made, or while it was in flight, fetches
// again, and the local row ends at the newest state.
func testCurrentNewerState(t *testing.T, b StoreBackend) {
	cb := newCurrentBench(t, b)
	cb.needInbox(t)

	// After a fetch that has ended.
	cb.api.set("sub_new", "active", 1)
	cb.store(t, subscriptionEvent("evt_new_1", subUpdated, "sub_new", "", currentCreated, "active"))
	cb.work(t, 1)
	cb.requireRow(t, "sub_new", fakeSubscription{"active", 1}, 1)
	cb.api.set("sub_new", "past_due", 2)
	cb.store(t, subscriptionEvent("evt_new_2", subUpdated, "sub_new", "", currentCreated+1, "past_due"))
	cb.work(t, 1)
	require.Len(t, cb.api.callsOf("sub_new"), 2)
	cb.requireRow(t, "sub_new", fakeSubscription{"past_due", 2}, 2)

	// While the fetch is in flight: its answer may predate the change the
	// second event reports.
	cb.api.set("sub_inflight", "active", 1)
	cb.store(t, subscriptionEvent("evt_inflight_1", subUpdated, "sub_inflight", "", currentCreated, "active"))
	arrived, release := cb.api.hold("sub_inflight")
	worked := make(chan int, 1)
	go func() {
		n, err := cb.inbox.WorkDue(ctxT(t))
		if err != nil {
			n = -1
		}
		worked <- n
	}()
	receive(t, arrived, "the first event's fetch")
	cb.api.set("sub_inflight", "canceled", 2)
	cb.store(t, subscriptionEvent("evt_inflight_2", subDeleted, "sub_inflight", "", currentCreated+1, "canceled"))
	close(release)
	n := receive(t, worked, "the worker whose fetch was held")
	require.GreaterOrEqual(t, n, 1, "WorkDue failed or made no attempt")
	n2, err := cb.inbox.WorkDue(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, 2, n+n2, "attempts made by WorkDue")
	calls := cb.api.callsOf("sub_inflight")
	require.Len(t, calls, 2, "the event received during the fetch fetched again")
	require.Equal(t, fakeSubscription{"active", 1}, calls[0].Sent)
	cb.requireRow(t, "sub_inflight", fakeSubscription{"canceled", 2}, 2)
	for _, id := range []string{"evt_inflight_1", "evt_inflight_2"} {
		require.Equal(t, idempotency.InboxProcessed, cb.inboxState(t, id).State, id)
	}
}

// testCurrentRolledBackFetch: a handler that fetched and then failed
// (rolled back) does not count as a fetch: an event stored before it
// fetches again rather than skipping.
func testCurrentRolledBackFetch(t *testing.T, b StoreBackend) {
	cb := newCurrentBench(t, b)
	cb.needInbox(t)
	cb.api.set("sub_rb", "active", 1)
	cb.store(t, subscriptionEvent("evt_rb_stored", subUpdated, "sub_rb", "", currentCreated, "active"))
	cb.setFail(func(id string) error {
		if id == "evt_rb_failing" {
			return errHandler
		}
		return nil
	})
	// A synchronous delivery of another event fetches after the stored
	// event was received, then fails.
	cb.deliverSync(t, subscriptionEvent("evt_rb_failing", subUpdated, "sub_rb", "", currentCreated+1, "active"), http.StatusInternalServerError, "")
	require.Len(t, cb.api.callsOf("sub_rb"), 1)
	require.Len(t, cb.runsOf("evt_rb_failing"), 1, "the failing handler ran after its fetch")
	cb.requireNoRow(t, "sub_rb")
	requireNoEvent(t, b, "evt_rb_failing")

	cb.api.set("sub_rb", "past_due", 2)
	cb.work(t, 1)
	require.Len(t, cb.api.callsOf("sub_rb"), 2, "the stored event skipped its fetch on a rolled-back one")
	cb.requireRow(t, "sub_rb", fakeSubscription{"past_due", 2}, 1)
	requireEvent(t, b, "evt_rb_stored", idempotency.OutcomeProcessed)

	cb.setFail(nil)
	cb.deliverSync(t, subscriptionEvent("evt_rb_failing", subUpdated, "sub_rb", "", currentCreated+1, "active"), http.StatusOK, idempotency.OutcomeProcessed)
	cb.requireRow(t, "sub_rb", fakeSubscription{"past_due", 2}, 2)
}

// testCurrentReverseOrder: created, updated and deleted of one
// subscription, all in one second, delivered in reverse order: the local
// row is the object's final state at the API (canceled), where applying
// the payloads in arrival order would leave the created event's.
func testCurrentReverseOrder(t *testing.T, b StoreBackend, inbox bool) {
	cb := newCurrentBench(t, b)
	sub := "sub_rev_sync"
	if inbox {
		cb.needInbox(t)
		sub = "sub_rev_inbox"
	}
	cb.api.set(sub, "canceled", 3)
	events := [][]byte{
		subscriptionEvent("evt_rev_3_"+sub, subDeleted, sub, "", currentCreated, "canceled"),
		subscriptionEvent("evt_rev_2_"+sub, subUpdated, sub, "", currentCreated, "active"),
		subscriptionEvent("evt_rev_1_"+sub, subCreated, sub, "", currentCreated, "incomplete"),
	}
	for _, ev := range events {
		if inbox {
			cb.store(t, ev)
		} else {
			cb.deliverSync(t, ev, http.StatusOK, idempotency.OutcomeProcessed)
		}
	}
	if inbox {
		cb.work(t, 3)
		require.Len(t, cb.api.callsOf(sub), 1, "one fetch for the three stored events")
		cb.requireRow(t, sub, fakeSubscription{"canceled", 3}, 1)
	} else {
		require.Len(t, cb.api.callsOf(sub), 3, "each synchronous delivery arrived after the fetch before it")
		cb.requireRow(t, sub, fakeSubscription{"canceled", 3}, 3)
	}
	for _, r := range cb.runsOf("evt_rev_") {
		require.Equal(t, fakeSubscription{"canceled", 3}, r.Seen, "the handler of %s was given the payload, not the object", r.EventID)
	}
	for _, id := range []string{"evt_rev_1_", "evt_rev_2_", "evt_rev_3_"} {
		requireEvent(t, b, id+sub, idempotency.OutcomeProcessed)
	}
}

// testCurrentConcurrentSync: 100 updates of one subscription delivered at
// once to the synchronous Handler: the local row is the API's state, and
// every delivery is answered processed (none fails on the object's lock or
// a store's conflict). The deliveries that arrived before a fetch began
// share it, whether they waited on the object's lock or for a pooled
// connection, and a rerun of a delivery's transaction keeps its number.
// The first fetch is held until every delivery has reached the store, so
// every later fetch begins after all have arrived: one or two fetches, and
// one more for each delivery that took its number between a fetch's lock
// and its commit (how many is logged), at most 10. Without the hold,
// deliveries that a busy machine lets arrive one by one each need a
// fetch of their own.
func testCurrentConcurrentSync(t *testing.T, b StoreBackend) {
	cb := newCurrentBench(t, b)
	const events = 100
	counting := &attemptCountingStore{Store: b.Store, want: events, allEntered: make(chan struct{})}
	h, err := idempotency.NewHandler(counting, cb.hs, cb.hcfg)
	require.NoError(t, err)
	cb.api.set("sub_burst", "past_due", 7)
	fetching, hold := cb.api.hold("sub_burst")
	release := sync.OnceFunc(func() { close(hold) })
	t.Cleanup(release) // a failed wait must not leave the deliveries held
	payloads := make([][]byte, events)
	for i := range payloads {
		payloads[i] = subscriptionEvent(fmt.Sprintf("evt_burst_%03d", i), subUpdated, "sub_burst", "", currentCreated, "active")
	}
	answers := make([]Answer, events)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(events)
	for i := range events {
		done.Go(func() {
			ready.Done()
			<-start
			answers[i] = Deliver(h, payloads[i], currentSecret)
		})
	}
	ready.Wait()
	close(start)
	receive(t, fetching, "the first fetch")
	receive(t, counting.allEntered, "the deliveries reaching the store")
	release()
	waitAll(t, &done, "the concurrent deliveries")
	burstFetches, burstAttempts := len(cb.api.callsOf("sub_burst")), counting.attempts.Load()
	t.Logf("%d concurrent deliveries of one subscription: %d fetches in %d transactions", events, burstFetches, burstAttempts)
	for i, a := range answers {
		require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, "delivery %d: %d %s", i, a.Status, a.Body)
	}
	require.LessOrEqual(t, burstFetches, 10, "the concurrent deliveries shared few fetches (%d transactions)", burstAttempts)
	for i := range events {
		requireEvent(t, b, fmt.Sprintf("evt_burst_%03d", i), idempotency.OutcomeProcessed)
	}
	runs := cb.runsOf("evt_burst_")
	require.NotEmpty(t, runs)
	for _, r := range runs {
		require.Equal(t, fakeSubscription{"past_due", 7}, r.Seen)
	}
	got, ok := cb.row("sub_burst")
	require.True(t, ok)
	require.Equal(t, fakeSubscription{"past_due", 7}, got)
	require.Equal(t, len(runs), b.Get(t, "writes:sub_burst"), "every handler run committed")
}

// attemptCountingStore is a Store that counts the transactions it runs a
// handler in, its reruns included, and closes allEntered when want calls
// of Run have begun.
type attemptCountingStore struct {
	idempotency.Store
	attempts   atomic.Int64
	entered    atomic.Int64
	want       int64
	allEntered chan struct{}
}

func (s *attemptCountingStore) Run(ctx context.Context, c idempotency.Claim, apply idempotency.ApplyFunc) (idempotency.Outcome, error) {
	if s.entered.Add(1) == s.want {
		close(s.allEntered)
	}
	if apply == nil {
		return s.Store.Run(ctx, c, nil)
	}
	return s.Store.Run(ctx, c, func(ctx context.Context, tx idempotency.Tx) error {
		s.attempts.Add(1)
		return apply(ctx, tx)
	})
}

// testCurrentNotFound: an object the API answers 404 for is skipped, with
// a reason naming the 404, and the handler does not run; in both modes.
func testCurrentNotFound(t *testing.T, b StoreBackend) {
	cb := newCurrentBench(t, b)
	cb.deliverSync(t, subscriptionEvent("evt_gone_sync", subDeleted, "sub_gone", "", currentCreated, "canceled"), http.StatusOK, idempotency.OutcomeSkipped)
	rec := requireEvent(t, b, "evt_gone_sync", idempotency.OutcomeSkipped)
	require.Contains(t, rec.SkipReason, "404")
	require.Len(t, cb.api.callsOf("sub_gone"), 1)
	require.Equal(t, http.StatusNotFound, cb.api.callsOf("sub_gone")[0].Status)
	require.Empty(t, cb.runsOf("evt_gone_"), "the handler ran for an object the API does not know")
	cb.requireNoRow(t, "sub_gone")

	if cb.inbox == nil {
		return
	}
	cb.store(t, subscriptionEvent("evt_gone_inbox", subDeleted, "sub_gone", "", currentCreated, "canceled"))
	cb.work(t, 1)
	require.Equal(t, idempotency.InboxSkipped, cb.inboxState(t, "evt_gone_inbox").State)
	rec = requireEvent(t, b, "evt_gone_inbox", idempotency.OutcomeSkipped)
	require.Contains(t, rec.SkipReason, "404")
	require.Empty(t, cb.runsOf("evt_gone_"))
	cb.requireNoRow(t, "sub_gone")
}

// testCurrentFetchErrorSync: a fetch the API answers 500 or 429 fails the
// synchronous delivery 503 stripe_unavailable, as a thin event's fetch
// that may pass is answered, and one it refuses (403) 500
// processing_failed; each writes nothing. Stripe's redelivery, once the
// API answers, is processed with the object's state.
func testCurrentFetchErrorSync(t *testing.T, b StoreBackend) {
	cb := newCurrentBench(t, b)
	cb.api.set("sub_err", "active", 1)
	ev := subscriptionEvent("evt_fetch_err", subUpdated, "sub_err", "", currentCreated, "active")
	for _, c := range []struct {
		api, status int
		body        string
	}{
		{http.StatusInternalServerError, http.StatusServiceUnavailable, `{"error":"stripe_unavailable"}`},
		{http.StatusTooManyRequests, http.StatusServiceUnavailable, `{"error":"stripe_unavailable"}`},
		{http.StatusForbidden, http.StatusInternalServerError, `{"error":"processing_failed"}`},
	} {
		cb.api.failNext(c.api)
		a := Deliver(cb.sync, ev, currentSecret)
		require.Equal(t, c.status, a.Status, "the API answered %d: %s", c.api, a.Body)
		require.JSONEq(t, c.body, a.Body, "the API answered %d", c.api)
		requireNoEvent(t, b, "evt_fetch_err")
		cb.requireNoRow(t, "sub_err")
		require.Empty(t, cb.runsOf("evt_fetch_err"), "the handler ran after a failed fetch (%d)", c.api)
	}
	cb.api.set("sub_err", "past_due", 2)
	cb.deliverSync(t, ev, http.StatusOK, idempotency.OutcomeProcessed)
	calls := cb.api.callsOf("sub_err")
	require.Len(t, calls, 4)
	require.Equal(t, []int{http.StatusInternalServerError, http.StatusTooManyRequests, http.StatusForbidden, http.StatusOK},
		[]int{calls[0].Status, calls[1].Status, calls[2].Status, calls[3].Status}, "one request per delivery: no retry in the client")
	cb.requireRow(t, "sub_err", fakeSubscription{"past_due", 2}, 1)
	requireEvent(t, b, "evt_fetch_err", idempotency.OutcomeProcessed)
}

// testCurrentFetchErrorInbox: in the inbox a failed fetch fails the
// attempt, which is retried after the backoff and not before; the retry
// fetches the state of that moment.
func testCurrentFetchErrorInbox(t *testing.T, b StoreBackend) {
	cb := newCurrentBench(t, b)
	cb.needInbox(t)
	cb.api.set("sub_err_in", "active", 1)
	cb.store(t, subscriptionEvent("evt_fetch_err_in", subUpdated, "sub_err_in", "", currentCreated, "active"))
	cb.api.failNext(http.StatusServiceUnavailable)
	cb.work(t, 1)
	r := cb.inboxState(t, "evt_fetch_err_in")
	require.Equal(t, idempotency.InboxFailed, r.State)
	require.Contains(t, r.LastError, "fetching the current object")
	require.Equal(t, cb.clock.Now().Add(time.Minute), r.NextAttemptAt)
	cb.requireNoRow(t, "sub_err_in")
	requireNoEvent(t, b, "evt_fetch_err_in")

	cb.api.set("sub_err_in", "past_due", 2)
	cb.clock.Advance(59 * time.Second)
	cb.work(t, 0)
	cb.clock.Advance(time.Second)
	cb.work(t, 1)
	require.Equal(t, idempotency.InboxProcessed, cb.inboxState(t, "evt_fetch_err_in").State)
	require.Len(t, cb.api.callsOf("sub_err_in"), 2)
	cb.requireRow(t, "sub_err_in", fakeSubscription{"past_due", 2}, 1)
	requireEvent(t, b, "evt_fetch_err_in", idempotency.OutcomeProcessed)
}

// testCurrentConnect: an event of a connected account is fetched as that
// account (the FetchFunc is given it, and stripe-go sends Stripe-Account),
// an event of the platform without the header; in both modes.
func testCurrentConnect(t *testing.T, b StoreBackend) {
	cb := newCurrentBench(t, b)
	cb.api.set("sub_conn", "active", 1)
	cb.api.set("sub_platform", "active", 1)
	cb.deliverSync(t, subscriptionEvent("evt_conn_sync", subUpdated, "sub_conn", "acct_1Connected", currentCreated, "active"), http.StatusOK, idempotency.OutcomeProcessed)
	cb.deliverSync(t, subscriptionEvent("evt_platform", subUpdated, "sub_platform", "", currentCreated, "active"), http.StatusOK, idempotency.OutcomeProcessed)
	wantCalls := 1
	if cb.inbox != nil {
		cb.api.set("sub_conn", "past_due", 2)
		cb.store(t, subscriptionEvent("evt_conn_inbox", subUpdated, "sub_conn", "acct_1Connected", currentCreated+1, "past_due"))
		cb.work(t, 1)
		wantCalls = 2
	}
	calls := cb.api.callsOf("sub_conn")
	require.Len(t, calls, wantCalls)
	for _, c := range calls {
		require.Equal(t, "acct_1Connected", c.Account, "a connected account's object was fetched as the platform")
		require.Equal(t, "Bearer sk_test_conformance", c.Header.Get("Authorization"))
	}
	platform := cb.api.callsOf("sub_platform")
	require.Len(t, platform, 1)
	require.Empty(t, platform[0].Account, "the platform's object was fetched with Stripe-Account")
	require.Empty(t, platform[0].Header.Values("Stripe-Account"))
	for _, f := range cb.fetchesSnapshot() {
		want := ""
		if f.ID == "sub_conn" {
			want = "acct_1Connected"
		}
		require.Equal(t, want, f.Account, "the account the FetchFunc was given for %s", f.ID)
	}
	for _, r := range cb.runsOf("evt_conn_") {
		require.Equal(t, "acct_1Connected", r.Account)
	}
}

// orderIn runs CheckOrder in event id's transaction on the store and
// returns its answers for the given created times, in turn; the
// transaction then commits, or rolls back when result is an error.
func orderIn(t *testing.T, b StoreBackend, id, scope, key string, result error, created ...time.Time) []idempotency.Order {
	t.Helper()
	var answers []idempotency.Order
	_, err := b.Store.Run(ctxT(t), claim(id), func(ctx context.Context, tx idempotency.Tx) error {
		answers = answers[:0] // of the last attempt: a store may run the transaction again
		for _, c := range created {
			o, err := idempotency.CheckOrder(ctx, tx, scope, key, c)
			if err != nil {
				return err
			}
			answers = append(answers, o)
		}
		return result
	})
	if result == nil {
		require.NoError(t, err)
	} else {
		require.ErrorIs(t, err, result)
	}
	return answers
}

func sec(n int64) time.Time { return time.Unix(currentCreated+n, 0) }

// orderAnswer is what a CheckOrder of checkOrderAsync answered.
type orderAnswer struct {
	o   idempotency.Order
	err error
}

// checkOrderAsync runs CheckOrder of scope and key for an event created
// at created in event id's transaction, on a goroutine of its own (one
// that waits for the key's holder), and answers on the channel it
// returns.
func checkOrderAsync(ctx context.Context, b StoreBackend, id, scope, key string, created time.Time) <-chan orderAnswer {
	answer := make(chan orderAnswer, 1)
	go func() {
		var o idempotency.Order // of the last attempt: a store may run the transaction again
		_, err := b.Store.Run(ctx, claim(id), func(ctx context.Context, tx idempotency.Tx) error {
			var err error
			o, err = idempotency.CheckOrder(ctx, tx, scope, key, created)
			return err
		})
		answer <- orderAnswer{o, err}
	}()
	return answer
}

// testCheckOrderAnswers: CheckOrder orders the events applied for a key by
// created, and answers tie for the same second whatever the ids; an event
// checked twice in its transaction is still newer. Keys are independent.
func testCheckOrderAnswers(t *testing.T, b StoreBackend) {
	const scope = "subscription"
	o := func(id string, created ...time.Time) []idempotency.Order {
		t.Helper()
		return orderIn(t, b, id, scope, "sub_order", nil, created...)
	}
	newer, older, tie := idempotency.OrderNewer, idempotency.OrderOlder, idempotency.OrderTie
	require.Equal(t, []idempotency.Order{newer, newer}, o("evt_ord_m", sec(10), sec(10)), "the first event, and the same event again")
	require.Equal(t, []idempotency.Order{older}, o("evt_ord_a", sec(9)))
	require.Equal(t, []idempotency.Order{newer}, o("evt_ord_n", sec(11)))
	// Same second as the newest (evt_ord_n), with a smaller id: tie, and
	// the newest stays evt_ord_n, so a second check is a tie again.
	require.Equal(t, []idempotency.Order{tie, tie}, o("evt_ord_b", sec(11), sec(11)))
	// A larger id in the same second: a tie too, and checking it again
	// still is: a tie is kept for its second, whichever id sorts last.
	require.Equal(t, []idempotency.Order{tie, tie}, o("evt_ord_z", sec(11), sec(11)))
	// Sub-second parts do not order: created has one-second resolution.
	require.Equal(t, []idempotency.Order{tie}, o("evt_ord_c", sec(11).Add(900*time.Millisecond)))
	require.Equal(t, []idempotency.Order{older}, o("evt_ord_d", sec(10).Add(999*time.Millisecond)))
	require.Equal(t, []idempotency.Order{newer}, o("evt_ord_e", sec(12)))

	require.Equal(t, []idempotency.Order{newer}, orderIn(t, b, "evt_ord_other_key", scope, "sub_other", nil, sec(1)), "another key")
	require.Equal(t, []idempotency.Order{newer}, orderIn(t, b, "evt_ord_other_scope", "customer", "sub_order", nil, sec(1)), "another scope")
}

// testCheckOrderKeysApart: a newer event of one key moves that key's
// record only: another key of the scope keeps its own newest event.
func testCheckOrderKeysApart(t *testing.T, b StoreBackend) {
	const scope = "subscription"
	newer, older := idempotency.OrderNewer, idempotency.OrderOlder
	require.Equal(t, []idempotency.Order{newer}, orderIn(t, b, "evt_apart_1", scope, "sub_apart_1", nil, sec(10)))
	require.Equal(t, []idempotency.Order{newer}, orderIn(t, b, "evt_apart_2", scope, "sub_apart_2", nil, sec(5)))
	require.Equal(t, []idempotency.Order{newer}, orderIn(t, b, "evt_apart_3", scope, "sub_apart_2", nil, sec(6)), "a newer event of the second key")
	require.Equal(t, []idempotency.Order{older}, orderIn(t, b, "evt_apart_4", scope, "sub_apart_1", nil, sec(8)),
		"the first key's newest is still its own event of second 10")
}

// testCheckOrderTransactional: the record commits and rolls back with the
// event's transaction: a rolled-back newer event does not become the
// newest, a committed one does.
func testCheckOrderTransactional(t *testing.T, b StoreBackend) {
	const scope, key = "subscription", "sub_tx"
	newer, older := idempotency.OrderNewer, idempotency.OrderOlder
	require.Equal(t, []idempotency.Order{newer}, orderIn(t, b, "evt_tx_1", scope, key, nil, sec(10)))
	require.Equal(t, []idempotency.Order{newer}, orderIn(t, b, "evt_tx_rb", scope, key, errHandler, sec(30)))
	require.Equal(t, []idempotency.Order{newer}, orderIn(t, b, "evt_tx_2", scope, key, nil, sec(20)), "the rolled-back event became the newest")
	require.Equal(t, []idempotency.Order{older}, orderIn(t, b, "evt_tx_3", scope, key, nil, sec(15)), "the committed event is not the newest")
	// A skip rolls the record back with the handler's writes.
	_, err := b.Store.Run(ctxT(t), claim("evt_tx_skip"), func(ctx context.Context, tx idempotency.Tx) error {
		o, err := idempotency.CheckOrder(ctx, tx, scope, key, sec(40))
		if err != nil {
			return err
		}
		if o != newer {
			return fmt.Errorf("CheckOrder: %s, want newer", o)
		}
		return idempotency.Skip("not for us")
	})
	require.NoError(t, err)
	require.Equal(t, []idempotency.Order{newer}, orderIn(t, b, "evt_tx_4", scope, key, nil, sec(25)), "the skipped event became the newest")
	// The failed event's retry, as Stripe sends it, is newer.
	require.Equal(t, []idempotency.Order{newer}, orderIn(t, b, "evt_tx_rb", scope, key, nil, sec(30)))
}

// testCheckOrderWaits: a CheckOrder of a key whose record another
// transaction in flight holds waits for it to end, and then sees its
// record if it committed (older), or not if it rolled back (newer).
func testCheckOrderWaits(t *testing.T, b StoreBackend, holderResult error) {
	const scope, key = "subscription", "sub_wait"
	ctx := ctxT(t)
	held := make(chan struct{})
	releaseHolder, release := releaser(t)
	holder := make(chan error, 1)
	go func() {
		_, err := b.Store.Run(ctx, claim("evt_ow_holder"), func(ctx context.Context, tx idempotency.Tx) error {
			o, err := idempotency.CheckOrder(ctx, tx, scope, key, sec(50))
			if err != nil {
				return err
			}
			if o != idempotency.OrderNewer {
				return fmt.Errorf("the holder's CheckOrder: %s, want newer", o)
			}
			close(held)
			<-release
			return holderResult
		})
		holder <- err
	}()
	receive(t, held, "the holder's CheckOrder")
	waiter := checkOrderAsync(ctx, b, "evt_ow_waiter", scope, key, sec(40))
	waitingReaches(t, b, 1, waitLimit,
		"the second CheckOrder should wait for the holder")
	select {
	case r := <-waiter:
		t.Fatalf("CheckOrder answered %s (%v) while the key was held", r.o, r.err)
	default:
	}
	releaseHolder()
	require.ErrorIs(t, receive(t, holder, "the holder's Run"), holderResult)
	got := receive(t, waiter, "the CheckOrder waiting for the holder, which has ended,")
	require.NoError(t, got.err)
	want := idempotency.OrderOlder
	if holderResult != nil {
		want = idempotency.OrderNewer
	}
	require.Equal(t, want, got.o, "older only when the holder committed")
}

// foreignTx is a Tx of no store of the package.
type foreignTx struct{}

func (foreignTx) Guard(context.Context, string, string) (bool, error) { return true, nil }
func (foreignTx) AfterCommit(func(context.Context))                   {}
func (foreignTx) EventID() string                                     { return "evt_foreign" }
func (foreignTx) EventType() string                                   { return subUpdated }

// testCheckOrderBadInput: a scope or key no store can keep is refused with
// ErrInvalidKey, before anything is recorded, and a Tx of no store of the
// package with ErrNeedsStoreTx.
func testCheckOrderBadInput(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	bad := map[string][2]string{
		"empty scope":         {"", "sub_1"},
		"empty key":           {"subscription", ""},
		"NUL in key":          {"subscription", "sub_\x00"},
		"invalid UTF-8 scope": {"subscription\xff", "sub_1"},
	}
	for name, sk := range bad {
		out, err := b.Store.Run(ctx, claim("evt_ord_bad"), func(ctx context.Context, tx idempotency.Tx) error {
			_, err := idempotency.CheckOrder(ctx, tx, sk[0], sk[1], sec(0))
			return err
		})
		require.ErrorIs(t, err, idempotency.ErrInvalidKey, name)
		require.Equal(t, idempotency.OutcomeFailed, out, name)
	}
	// created outside the years 1 to 9999, which Event.Created never is.
	for name, created := range map[string]time.Time{
		"created in the year 10000": time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		"created before the year 1": time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC),
	} {
		out, err := b.Store.Run(ctx, claim("evt_ord_bad"), func(ctx context.Context, tx idempotency.Tx) error {
			_, err := idempotency.CheckOrder(ctx, tx, "subscription", "sub_1", created)
			return err
		})
		require.ErrorIs(t, err, idempotency.ErrInvalidKey, name)
		require.Equal(t, idempotency.OutcomeFailed, out, name)
	}
	requireNoEvent(t, b, "evt_ord_bad")
	// The store still works for the key, and nothing was recorded for it.
	require.Equal(t, []idempotency.Order{idempotency.OrderNewer}, orderIn(t, b, "evt_ord_good", "subscription", "sub_1", nil, sec(0)))

	_, err := idempotency.CheckOrder(ctx, foreignTx{}, "subscription", "sub_1", sec(0))
	require.ErrorIs(t, err, idempotency.ErrNeedsStoreTx)
}
