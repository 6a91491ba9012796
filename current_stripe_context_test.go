package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// A thin event's context may be a path of accounts, such as a connected
// account's recipient (acct_1/acct_2), which Stripe-Context takes and
// Stripe-Account does not: Retrieve fetches the related object of such an
// event with Stripe-Context, as it fetched the event, and the object of an
// event of one account still with Stripe-Account.
func TestRetrieveContextPath(t *testing.T) {
	t.Parallel()
	const path = "acct_1Platform/" + thinAccount
	f := newFakeStripe()
	notification, event := thinEvent("evt_thin_path")
	f.v2["evt_thin_path"] = []byte(strings.ReplaceAll(string(event), thinAccount, path))
	notification = []byte(strings.ReplaceAll(string(notification), thinAccount, path))

	type fetch struct{ account, context string }
	var mu sync.Mutex
	var fetches []fetch
	mux := http.NewServeMux()
	mux.Handle("/", f)
	mux.HandleFunc("GET /v1/billing/meters/{id}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		fetches = append(fetches, fetch{r.Header.Get("Stripe-Account"), r.Header.Get("Stripe-Context")})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"` + r.PathValue("id") + `","object":"billing.meter","status":"active"}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	client := stripe.NewClient(fakeStripeKey, fakeBackends(srv.URL, nil))

	var got []string
	hs := idempotency.NewHandlers()
	idempotency.OnCurrent(hs, []string{thinType}, idempotency.Retrieve(client.V1BillingMeters.Retrieve),
		func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.BillingMeter]) error {
			got = append(got, ev.Object.ID+" of "+ev.Account)
			return nil
		})
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(), StripeClient: client,
	})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, notification, testSecret)
	require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
	require.Equal(t, []string{thinMeter + " of " + path}, got)
	require.Equal(t, path, f.calls()[0].Header.Get("Stripe-Context"), "the event fetched as its context")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []fetch{{context: path}}, fetches, "the related object fetched as the event's context")

	// One account: Stripe-Account, as for a snapshot event of a
	// connected account.
	var params *stripe.SubscriptionRetrieveParams
	one := idempotency.Retrieve(func(_ context.Context, id string, p *stripe.SubscriptionRetrieveParams) (*stripe.Subscription, error) {
		params = p
		return &stripe.Subscription{ID: id}, nil
	})
	_, err = one(t.Context(), "sub_1", thinAccount)
	require.NoError(t, err)
	require.Equal(t, thinAccount, *params.StripeAccount)
	require.Nil(t, params.StripeContext)
}
