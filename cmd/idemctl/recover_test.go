package main

import (
	"encoding/json"
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

	"github.com/seed-a84bb619/idempotency"
)

const stripeKey = "sk_test_idemctl_0123456789"

// eventsAPI is a fake of GET /v1/events that holds fewer events than a
// page: the first request lists every event that matches its filters,
// newest first; a request with a cursor lists none newer. It keeps the
// queries it was sent.
type eventsAPI struct {
	events [][]byte // oldest first
	types  []string // the type of each event

	mu       sync.Mutex
	queries  []url.Values
	accounts [][]string // each request's Stripe-Account headers
}

func (f *eventsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || r.URL.Path != "/v1/events" || r.Header.Get("Authorization") != "Bearer "+stripeKey {
		http.Error(w, `{"error":{"type":"invalid_request_error","message":"unexpected request"}}`, http.StatusBadRequest)
		return
	}
	q := r.URL.Query()
	f.mu.Lock()
	f.queries = append(f.queries, q)
	f.accounts = append(f.accounts, r.Header.Values("Stripe-Account"))
	f.mu.Unlock()
	var types []string
	for k, v := range q {
		if k == "types[]" || len(k) > 6 && k[:6] == "types[" {
			types = append(types, v...)
		}
	}
	data := []json.RawMessage{}
	if q.Get("ending_before") == "" && q.Get("starting_after") == "" {
		for i := len(f.events) - 1; i >= 0; i-- {
			if len(types) == 0 || slices.Contains(types, f.types[i]) {
				data = append(data, f.events[i])
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "url": "/v1/events", "has_more": false, "data": data})
}

// TestRecover: the listed events of -types are stored pending in the inbox
// for the service's workers, and those the service then applies (one of a
// type it has no handler for is retried, failed, as recover -h says); a
// second run finds them duplicates; the key never shows; a -since beyond the
// Events API's window and a missing key are usage errors.
func TestRecover(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	created := time.Now().Add(-time.Hour).Unix()
	api := &eventsAPI{}
	for i, typ := range []string{"invoice.paid", "customer.created", "invoice.paid", "charge.failed"} {
		id := "evt_rec_" + strconv.Itoa(i)
		api.events = append(api.events, eventPayload(t, id, typ, "obj_"+strconv.Itoa(i), created+int64(i)))
		api.types = append(api.types, typ)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	env := map[string]string{"STRIPE_SECRET_KEY": stripeKey}

	r := idemctl(t, s.db, env, "recover", "-since", "2h", "-types", "invoice.paid,charge.failed", "-api-base", srv.URL,
		"-checkpoint", "ops", "-only-undelivered", "-progress", "lines")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^listed\s+3$`, r.stdout)
	require.Regexp(t, `(?m)^queued\s+3\s+stored pending`, r.stdout)
	require.Regexp(t, `(?m)^duplicate\s+0`, r.stdout)
	require.Regexp(t, `(?m)^failed\s+0`, r.stdout)
	require.Regexp(t, `(?m)^checkpoint at\s+evt_rec_3$`, r.stdout)
	require.Contains(t, r.stderr, "idemctl: recover: 1 page, 3 events received\n", "progress while paging")
	require.NotContains(t, r.stdout+r.stderr, stripeKey)
	q := api.queries[0]
	require.ElementsMatch(t, []string{"charge.failed", "invoice.paid"}, append(q["types[0]"], q["types[1]"]...), q)
	require.Equal(t, "false", q.Get("delivery_success"))

	for _, id := range []string{"evt_rec_0", "evt_rec_2", "evt_rec_3"} {
		require.Equal(t, idempotency.InboxPending, s.lookup(t, id).State, id)
	}
	_, stored, err := s.inbox.Lookup(t.Context(), "evt_rec_1")
	require.NoError(t, err)
	require.False(t, stored, "a type not asked for is not listed")
	// The service's workers apply them with its own handlers.
	s.work(t, s.inbox)
	require.Equal(t, idempotency.InboxProcessed, s.lookup(t, "evt_rec_0").State)
	require.Equal(t, idempotency.InboxFailed, s.lookup(t, "evt_rec_3").State)

	r = idemctl(t, s.db, env, "recover", "-since", "2h", "-types", "invoice.paid,charge.failed", "-api-base", srv.URL, "-json")
	require.Equal(t, 0, r.code, r.stderr)
	doc := decode[recoverJSON](t, r)
	require.Equal(t, recoverJSON{Listed: 3, Duplicate: 3, FailedIDs: []string{}, Requests: 2, LastEventID: "evt_rec_3", UnlistedTypes: []string{}}, doc)

	// A listed type the service has no handler for (customer.created) is
	// stored and retried, failed, not recorded ignored at once; recover -h
	// says so.
	r = idemctl(t, s.db, env, "recover", "-since", "2h", "-types", "customer.created", "-api-base", srv.URL)
	require.Equal(t, 0, r.code, r.stderr)
	s.work(t, s.inbox)
	unhandled := s.lookup(t, "evt_rec_1")
	require.Equal(t, idempotency.InboxFailed, unhandled.State)
	require.Contains(t, unhandled.LastError, idempotency.ErrNoHandler.Error())
	help := idemctl(t, nil, nil, "recover", "-h")
	require.Contains(t, strings.Join(strings.Fields(help.stdout+help.stderr), " "),
		"workers have no handler for is not applied: their attempts fail with ErrNoHandler and retry it with backoff")

	r = idemctl(t, s.db, env, "recover", "-since", "2h", "-types", "invoice.paid", "-api-base", srv.URL, "-checkpoint", "ops")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "recovery checkpoint started with other options")

	for _, c := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{env, []string{"-since", "31d", "-types", "invoice.paid"}, "recovery cannot reach back further than the Events API's 30 days"},
		{env, []string{"-types", "invoice.paid"}, "-since is required"},
		{env, []string{"-since", "1h"}, "-types is required"},
		{nil, []string{"-since", "1h", "-types", "invoice.paid"}, "STRIPE_SECRET_KEY is not set"},
		{map[string]string{"STRIPE_SECRET_KEY": "whsec_oops"}, []string{"-since", "1h", "-types", "invoice.paid"}, "STRIPE_SECRET_KEY is not a secret (sk_...) or restricted (rk_...) API key"},
		{env, []string{"-since", "1h", "-types", "invoice.paid", "-api-base", "localhost:12111"}, `-api-base "localhost:12111" is not an http(s) URL`},
		{env, []string{"-since", "1h", "-types", "invoice.paid", "-api-base", "http://localhost:12111/stripe"}, `-api-base "http://localhost:12111/stripe" has a path, query or fragment of its own`},
	} {
		r := idemctl(t, s.db, c.env, append([]string{"recover"}, c.args...)...)
		require.Equal(t, exitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, c.args)
		require.NotContains(t, r.stderr, "whsec_oops")
	}
}

// TestRecoverBadOptions: options the library refuses before any request
// (more types than the Events API takes, a checkpoint name the store
// cannot hold) are usage errors, exit 2, and nothing is requested.
func TestRecoverBadOptions(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	api := &eventsAPI{}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	env := map[string]string{"STRIPE_SECRET_KEY": stripeKey}
	types := make([]string, 21)
	for i := range types {
		types[i] = "type." + strconv.Itoa(i)
	}
	for _, args := range [][]string{
		{"-since", "1h", "-types", strings.Join(types, ","), "-api-base", srv.URL},
		{"-since", "1h", "-types", "invoice.paid", "-checkpoint", "ops\xff", "-api-base", srv.URL},
		{"-since", "1h", "-types", "invoice.*", "-api-base", srv.URL},
	} {
		r := idemctl(t, s.db, env, append([]string{"recover"}, args...)...)
		require.Equal(t, exitUsage, r.code, "%q: %s", args, r.stderr)
	}
	require.Empty(t, api.queries)
}

// TestRecoverHelpSaysInboxModeOnly: recover stores the events it lists in
// the inbox, for workers that a synchronous-mode service does not run:
// there they stay pending and are never applied. recover -h says so, and
// names what a synchronous service runs instead, Handler.Recover.
func TestRecoverHelpSaysInboxModeOnly(t *testing.T) {
	r := idemctl(t, nil, nil, "recover", "-h")
	require.Equal(t, exitOK, r.code, r.stderr)
	help := r.stdout + r.stderr
	require.Contains(t, help, "A synchronous-mode service")
	require.Contains(t, help, "Handler.Recover in the service")
}
