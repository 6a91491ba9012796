package idempotencytest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// snapshot returns a snapshot event id of typ, created at created, of
// account ("" for the platform's own).
func snapshot(t testing.TB, id, typ, account string, created int64) []byte {
	t.Helper()
	ev := map[string]any{
		"id": id, "object": "event", "type": typ, "api_version": stripe.APIVersion, "created": created,
		"livemode": false, "pending_webhooks": 0,
		"data": map[string]any{"object": map[string]any{"id": "in_" + id, "object": "invoice"}},
	}
	if account != "" {
		ev["account"] = account
	}
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	return b
}

// listV1 sends GET /v1/events?query to f, as account when not empty, and
// returns the status, the ids listed in the answer's order and has_more,
// or the error's type, code and message.
func listV1(t *testing.T, f http.Handler, query, account string) (status int, ids []string, hasMore bool, stripeErr map[string]string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "/v1/events?"+query, nil)
	if account != "" {
		r.Header.Set("Stripe-Account", account)
	}
	rec := httptest.NewRecorder()
	f.ServeHTTP(rec, r)
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var body struct {
		Object  string                `json:"object"`
		Data    []struct{ ID string } `json:"data"`
		HasMore bool                  `json:"has_more"`
		Error   map[string]string     `json:"error"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body), rec.Body.String())
	for _, ev := range body.Data {
		ids = append(ids, ev.ID)
	}
	if rec.Code == http.StatusOK {
		require.Equal(t, "list", body.Object)
	}
	return rec.Code, ids, body.HasMore, body.Error
}

// TestV1EventsListsAsStripe: V1Events lists newest first (within a
// second, the later added first), starting_after going older and
// ending_before newer with the page still newest first, has_more in the
// direction asked, and keeps what created, types[], type and
// delivery_success ask for.
func TestV1EventsListsAsStripe(t *testing.T) {
	t.Parallel()
	f := idempotencytest.NewV1Events()
	for i, created := range []int64{100, 100, 101, 102, 102, 103} {
		typ := "invoice.paid"
		if i%2 == 1 {
			typ = "customer.created"
		}
		add := f.Add
		if i == 2 {
			add = f.AddUndelivered
		}
		require.NotEmpty(t, add(snapshot(t, fmt.Sprintf("evt_%d", i), typ, "", created)))
	}
	cases := []struct {
		query   string
		listed  []string
		hasMore bool
	}{
		{"", []string{"evt_5", "evt_4", "evt_3", "evt_2", "evt_1", "evt_0"}, false},
		{"limit=2", []string{"evt_5", "evt_4"}, true},
		{"limit=2&starting_after=evt_4", []string{"evt_3", "evt_2"}, true},
		{"limit=2&starting_after=evt_2", []string{"evt_1", "evt_0"}, false},
		{"limit=2&ending_before=evt_0", []string{"evt_2", "evt_1"}, true},
		{"limit=2&ending_before=evt_2", []string{"evt_4", "evt_3"}, true},
		{"limit=3&ending_before=evt_3", []string{"evt_5", "evt_4"}, false},
		{"created[gte]=101&created[lt]=103", []string{"evt_4", "evt_3", "evt_2"}, false},
		{"created[gt]=101&created[lte]=102", []string{"evt_4", "evt_3"}, false},
		{"created=100", []string{"evt_1", "evt_0"}, false},
		{"created[gte]=101&limit=1&starting_after=evt_3", []string{"evt_2"}, false},
		{"types[0]=customer.created&types[1]=nothing.listed", []string{"evt_5", "evt_3", "evt_1"}, false},
		{"types[]=invoice.paid", []string{"evt_4", "evt_2", "evt_0"}, false},
		{"type=invoice.*", []string{"evt_4", "evt_2", "evt_0"}, false},
		{"type=customer.created&limit=1", []string{"evt_5"}, true},
		{"delivery_success=false", []string{"evt_2"}, false},
		{"delivery_success=true&limit=1&ending_before=evt_2", []string{"evt_3"}, true},
	}
	for _, c := range cases {
		status, listed, hasMore, stripeErr := listV1(t, f, c.query, "")
		require.Equal(t, http.StatusOK, status, "%s: %v", c.query, stripeErr)
		require.Equal(t, c.listed, listed, c.query)
		require.Equal(t, c.hasMore, hasMore, c.query)
	}
	require.Equal(t, len(cases), f.Requests())

	// An event added again keeps its place, as what it is now.
	f.Add(snapshot(t, "evt_2", "invoice.paid", "", 101))
	_, listed, _, _ := listV1(t, f, "delivery_success=false", "")
	require.Empty(t, listed)
	_, listed, _, _ = listV1(t, f, "created=101", "")
	require.Equal(t, []string{"evt_2"}, listed)
}

// TestV1EventsListsAnAccountsEventsAsIt: a connected account's event (its
// payload's account) is listed only to a request made as that account,
// and the platform's own only without Stripe-Account; a cursor of another
// account's event is not found.
func TestV1EventsListsAnAccountsEventsAsIt(t *testing.T) {
	t.Parallel()
	var f idempotencytest.V1Events // the zero value is ready
	f.Add(snapshot(t, "evt_platform", "invoice.paid", "", 100))
	f.Add(snapshot(t, "evt_a1", "invoice.paid", "acct_1", 101))
	f.Add(snapshot(t, "evt_a2", "invoice.paid", "acct_2", 102))
	for account, want := range map[string][]string{"": {"evt_platform"}, "acct_1": {"evt_a1"}, "acct_2": {"evt_a2"}, "acct_3": nil} {
		status, listed, _, _ := listV1(t, &f, "", account)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, want, listed, "as %q", account)
	}
	status, _, _, stripeErr := listV1(t, &f, "starting_after=evt_a1", "")
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "resource_missing", stripeErr["code"])
}

// TestV1EventsRefusesWhatItDoesNotTake: a request it cannot answer as
// Stripe would is refused with Stripe's JSON error, 400 naming the
// parameter or 404 for another path, which stripe-go reads as a
// *stripe.Error of that status, rather than answered with an empty list.
func TestV1EventsRefusesWhatItDoesNotTake(t *testing.T) {
	t.Parallel()
	f := idempotencytest.NewV1Events()
	f.Add(snapshot(t, "evt_1", "invoice.paid", "", 100))
	types := ""
	for i := range 21 {
		types += fmt.Sprintf("&types[%d]=t%d", i, i)
	}
	for query, says := range map[string]string{
		"expand[]=data":          "expands nothing (data)",
		"limit=0":                "limit",
		"limit=101":              "limit",
		"created[gte]=yesterday": "created[gte]",
		"delivery_success=maybe": "delivery_success",
		"starting_after=evt_1&ending_before=evt_1":    "starting_after and ending_before",
		"starting_after=evt_nope":                     "evt_nope",
		"type=invoice.paid&types[0]=invoice.paid":     "type and types",
		"limit=1&limit=2":                             "limit",
		"limit=1" + types:                             "types",
		"created[lt]=9223372036854775807&created=100": "created[lt]",
	} {
		status, listed, _, stripeErr := listV1(t, f, query, "")
		require.Equal(t, http.StatusBadRequest, status, query)
		require.Empty(t, listed, query)
		require.Equal(t, "invalid_request_error", stripeErr["type"], query)
		require.Contains(t, stripeErr["message"], says, query)
	}

	client := idempotencytest.NewStripeClient("sk_test_123", f)
	for _, path := range []string{"/v1/events/evt_1", "/v1/customers"} {
		err := client.V1Events.B.Call(http.MethodGet, path, "sk_test_123", nil, &stripe.Event{})
		var se *stripe.Error
		require.ErrorAs(t, err, &se, path)
		require.Equal(t, http.StatusNotFound, se.HTTPStatusCode, path)
		require.Equal(t, stripe.ErrorTypeInvalidRequest, se.Type, path)
	}
	for ev, err := range client.V1Events.List(t.Context(), &stripe.EventListParams{Type: stripe.String("invoice.paid"), Types: []*string{stripe.String("invoice.paid")}}) {
		var se *stripe.Error
		require.ErrorAs(t, err, &se)
		require.Equal(t, http.StatusBadRequest, se.HTTPStatusCode)
		require.Nil(t, ev)
	}
}
