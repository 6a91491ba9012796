package idempotency_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// fakeStripe is a stateful fake of the two Stripe API calls the package
// makes: GET /v1/events (the list, with Stripe's cursors, filters and
// order) and GET /v2/core/events/{id}. It refuses what Stripe refuses (an
// unknown parameter, both cursors, a limit over 100, more than 20 types),
// records every request, and answers the statuses a test injects.
type fakeStripe struct {
	mu       sync.Mutex
	events   []fakeEvent       // in creation order: seq is the index
	v2       map[string][]byte // v2 events by id
	requests []fakeRequest
	// fail, when set, is asked before each request is served (n counts
	// from 1) for a status to answer instead: 0 serves it.
	fail func(n int, r *http.Request) int
	// ignoreAccount lists every account's events whatever Stripe-Account
	// says, as a proxy that drops the header would.
	ignoreAccount bool
	// key is the API key it takes: fakeStripeKey when empty.
	key string
}

type fakeEvent struct {
	id, typ   string
	account   string // "account": the connected account's events are listed as it (Stripe-Account)
	created   int64
	delivered bool // delivery_success
	raw       []byte
}

type fakeRequest struct {
	Path    string
	Query   url.Values
	Header  http.Header
	At      time.Time // time.Now when served: the fake clock under synctest
	Status  int
	Listed  []string // the event ids answered, in the answer's order
	HasMore bool
}

const fakeStripeKey = "sk_test_fake_0123456789"

func newFakeStripe() *fakeStripe { return &fakeStripe{v2: map[string][]byte{}} }

// serve starts the fake on a loopback port and returns a client of it
// that makes no retries of its own.
func (f *fakeStripe) serve(t testing.TB) *stripe.Client {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return stripe.NewClient(f.apiKey(), fakeBackends(srv.URL, nil))
}

func (f *fakeStripe) apiKey() string {
	if f.key != "" {
		return f.key
	}
	return fakeStripeKey
}

// inProcess returns a client whose requests f serves in the process,
// without a network: what a testing/synctest bubble needs.
func (f *fakeStripe) inProcess() *stripe.Client {
	return idempotencytest.NewStripeClient(f.apiKey(), f)
}

// fakeBackends points a client at url, through hc when not nil, without
// retries or logs of stripe-go's own.
func fakeBackends(url string, hc *http.Client) stripe.ClientOption {
	return stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL: stripe.String(url), HTTPClient: hc, MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
	}))
}

// add appends a snapshot event; it is created after every event added
// before it.
func (f *fakeStripe) add(raw []byte) {
	var ev struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Created int64  `json:"created"`
		Account string `json:"account"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		panic(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, fakeEvent{id: ev.ID, typ: ev.Type, created: ev.Created, account: ev.Account, raw: raw})
}

// setDelivered marks the events whose delivery Stripe reports successful.
func (f *fakeStripe) setDelivered(ids ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.events {
		if slices.Contains(ids, f.events[i].id) {
			f.events[i].delivered = true
		}
	}
}

func (f *fakeStripe) calls() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

func (f *fakeStripe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	req := fakeRequest{Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), At: time.Now()}
	status, body := f.answer(r, &req)
	req.Status = status
	f.requests = append(f.requests, req)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", fmt.Sprintf("req_fake_%d", len(f.requests)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (f *fakeStripe) answer(r *http.Request, req *fakeRequest) (int, []byte) {
	if r.Header.Get("Authorization") != "Bearer "+f.apiKey() {
		return stripeError(http.StatusUnauthorized, "invalid_request_error", "", "Invalid API Key provided")
	}
	if f.fail != nil {
		if status := f.fail(len(f.requests)+1, r); status != 0 {
			typ, code := "api_error", ""
			if status == http.StatusTooManyRequests {
				typ, code = "invalid_request_error", "rate_limit"
			}
			return stripeError(status, typ, code, "injected")
		}
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/events":
		return f.list(r.URL.Query(), r.Header.Get("Stripe-Account"), req)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v2/core/events/"):
		if raw, ok := f.v2[strings.TrimPrefix(r.URL.Path, "/v2/core/events/")]; ok {
			return http.StatusOK, raw
		}
		return stripeError(http.StatusNotFound, "invalid_request_error", "resource_missing", "No such event")
	}
	return stripeError(http.StatusNotFound, "invalid_request_error", "", "Unrecognized request URL")
}

// list answers GET /v1/events as Stripe does: the events of account (the
// request's Stripe-Account; the platform's own without it), newest first
// (created, then creation order, descending); starting_after lists the
// older events after the cursor, ending_before the newer ones just before
// it, in the same order; has_more says whether more follow in that
// direction.
func (f *fakeStripe) list(q url.Values, account string, req *fakeRequest) (int, []byte) {
	bad := func(msg string) (int, []byte) {
		return stripeError(http.StatusBadRequest, "invalid_request_error", "parameter_invalid", msg)
	}
	limit := 10
	var types []string
	var gte, lt int64 = 0, 1 << 62
	var delivery *bool
	for key, vals := range q {
		v := vals[0]
		var err error
		switch {
		case key == "limit":
			if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 100 {
				return bad("limit must be between 1 and 100")
			}
		case key == "starting_after", key == "ending_before":
		case key == "created[gte]":
			gte, err = strconv.ParseInt(v, 10, 64)
		case key == "created[lt]":
			lt, err = strconv.ParseInt(v, 10, 64)
		case key == "delivery_success":
			b, perr := strconv.ParseBool(v)
			delivery, err = &b, perr
		case key == "types[]" || strings.HasPrefix(key, "types[") && strings.HasSuffix(key, "]"):
			types = append(types, vals...)
		default:
			return bad("unknown parameter " + key)
		}
		if err != nil {
			return bad("invalid " + key)
		}
	}
	if len(types) > 20 {
		return bad("at most 20 types")
	}
	after, before := q.Get("starting_after"), q.Get("ending_before")
	if after != "" && before != "" {
		return bad("Received both starting_after and ending_before parameters. Please pass in only one.")
	}
	// matching: the events the filters keep, in list order.
	var matching []int
	for i := len(f.events) - 1; i >= 0; i-- {
		e := f.events[i]
		if e.created >= gte && e.created < lt && (len(types) == 0 || slices.Contains(types, e.typ)) &&
			(delivery == nil || e.delivered == *delivery) && (f.ignoreAccount || e.account == account) {
			matching = append(matching, i)
		}
	}
	slices.SortStableFunc(matching, func(a, b int) int { // newest first; within a second, latest created first
		if c := f.events[b].created - f.events[a].created; c != 0 {
			return int(c)
		}
		return b - a
	})
	newer := func(a, b int) bool { // a is newer than b in list order
		ea, eb := f.events[a], f.events[b]
		return ea.created > eb.created || ea.created == eb.created && a > b
	}
	var page []int
	hasMore := false
	switch cursor := after + before; {
	case cursor == "":
		page = matching[:min(limit, len(matching))]
		hasMore = len(matching) > limit
	default:
		c := slices.IndexFunc(f.events, func(e fakeEvent) bool { return e.id == cursor })
		if c < 0 {
			return stripeError(http.StatusBadRequest, "invalid_request_error", "resource_missing", "No such event")
		}
		if after != "" {
			rest := slices.DeleteFunc(slices.Clone(matching), func(i int) bool { return !newer(c, i) })
			page, hasMore = rest[:min(limit, len(rest))], len(rest) > limit
		} else {
			rest := slices.DeleteFunc(slices.Clone(matching), func(i int) bool { return !newer(i, c) })
			page, hasMore = rest[max(0, len(rest)-limit):], len(rest) > limit
		}
	}
	data := make([]json.RawMessage, len(page))
	for j, i := range page {
		data[j] = f.events[i].raw
		req.Listed = append(req.Listed, f.events[i].id)
	}
	req.HasMore = hasMore
	body, err := json.Marshal(map[string]any{"object": "list", "url": "/v1/events", "has_more": hasMore, "data": data})
	if err != nil {
		panic(err)
	}
	return http.StatusOK, body
}

func stripeError(status int, typ, code, msg string) (int, []byte) {
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"type": typ, "code": code, "message": msg}})
	return status, body
}

// snapshotEvent is a snapshot event of typ about object objectID, created
// at created, in stripe-go's API version.
func snapshotEvent(t testing.TB, id, typ, objectID string, created int64) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "api_version": stripe.APIVersion, "created": created,
		"livemode": false, "pending_webhooks": 0, "type": typ,
		"request": map[string]any{"id": nil, "idempotency_key": nil},
		"data":    map[string]any{"object": map[string]any{"id": objectID, "object": strings.SplitN(typ, ".", 2)[0], "amount_paid": 100}},
	})
	require.NoError(t, err)
	return b
}

// TestFakeStripeCursors: the fake lists as Stripe does, so that the tests
// of recovery stand on it: newest first, starting_after going older,
// ending_before going newer with the page still newest first.
func TestFakeStripeCursors(t *testing.T) {
	t.Parallel()
	f := newFakeStripe()
	for i, created := range []int64{100, 100, 101, 102, 102, 103} {
		f.add(snapshotEvent(t, fmt.Sprintf("evt_%d", i), "invoice.paid", "in_1", created))
	}
	cases := []struct {
		query   string
		listed  []string
		hasMore bool
	}{
		{"limit=2", []string{"evt_5", "evt_4"}, true},
		{"limit=2&starting_after=evt_4", []string{"evt_3", "evt_2"}, true},
		{"limit=2&starting_after=evt_2", []string{"evt_1", "evt_0"}, false},
		{"limit=2&ending_before=evt_0", []string{"evt_2", "evt_1"}, true},
		{"limit=2&ending_before=evt_2", []string{"evt_4", "evt_3"}, true},
		{"limit=3&ending_before=evt_3", []string{"evt_5", "evt_4"}, false},
		{"created[gte]=101&created[lt]=103&limit=10", []string{"evt_4", "evt_3", "evt_2"}, false},
		{"limit=10&types[0]=customer.created", nil, false},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/v1/events?"+c.query, nil)
		r.Header.Set("Authorization", "Bearer "+fakeStripeKey)
		f.ServeHTTP(rec, r)
		require.Equal(t, http.StatusOK, rec.Code, c.query)
		last := f.calls()[len(f.calls())-1]
		require.Equal(t, c.listed, last.Listed, c.query)
		require.Equal(t, c.hasMore, last.HasMore, c.query)
	}
	for _, q := range []string{"limit=101", "starting_after=evt_1&ending_before=evt_2", "expand[]=data", "starting_after=evt_nope"} {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/v1/events?"+q, nil)
		r.Header.Set("Authorization", "Bearer "+fakeStripeKey)
		f.ServeHTTP(rec, r)
		require.Equal(t, http.StatusBadRequest, rec.Code, q)
	}
}
