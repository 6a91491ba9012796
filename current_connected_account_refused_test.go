package idempotency_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRetrieveConnectedAccountRefused: Stripe answers a request made as a
// connected account the platform has no access to (the account
// disconnected from the platform, or an id of no account) with 403
// account_invalid, "The provided key ... does not have access to account
// ...". Retrieve's error says that, not that the key lacks a permission,
// which is what a restricted key missing one is answered (403 without that
// code), and quotes nothing of Stripe's message (it repeats part of the
// key); the event fails and its handler does not run.
func TestRetrieveConnectedAccountRefused(t *testing.T) {
	t.Parallel()
	const msg = "The provided key 'sk_test_****1234' does not have access to account 'acct_gone' (or that account does not exist). Application access may have been revoked."
	fetch := idempotency.Retrieve(func(context.Context, string, *stripe.SubscriptionRetrieveParams) (*stripe.Subscription, error) {
		return nil, &stripe.Error{HTTPStatusCode: http.StatusForbidden, Type: stripe.ErrorTypeInvalidRequest,
			Code: stripe.ErrorCodeAccountInvalid, Msg: msg, RequestID: "req_1"}
	})
	_, err := fetch(t.Context(), "sub_1", "acct_gone")
	require.ErrorIs(t, err, idempotency.ErrStripeAPI)
	require.NotErrorIs(t, err, idempotency.ErrObjectNotFound)
	const says = "the platform has no access to the connected account (it disconnected, or there is no such account)"
	require.Contains(t, err.Error(), "HTTP 403 invalid_request_error (account_invalid), request req_1: "+says)
	require.NotContains(t, err.Error(), "restricted key")
	require.NotContains(t, err.Error(), "1234", "the message is not quoted")

	// A restricted key without the permission is still said to be one.
	fetch = idempotency.Retrieve(func(context.Context, string, *stripe.SubscriptionRetrieveParams) (*stripe.Subscription, error) {
		return nil, &stripe.Error{HTTPStatusCode: http.StatusForbidden, Type: stripe.ErrorTypeInvalidRequest,
			Msg: "The provided key 'rk_test_****1234' does not have the required permissions for this endpoint on account 'acct_1'."}
	})
	_, err = fetch(t.Context(), "sub_1", "acct_1")
	require.ErrorContains(t, err, "the API key is not allowed this request (a restricted key without the permission)")

	// Through a Handler, from Stripe's answer on the wire.
	var ev map[string]any
	require.NoError(t, json.Unmarshal(fixture(t, "customer.subscription.updated"), &ev))
	ev["account"] = "acct_gone"
	payload, err := json.Marshal(ev)
	require.NoError(t, err)
	_, body := stripeError(http.StatusForbidden, "invalid_request_error", "account_invalid", msg)
	a, res, account, ran := deliverRefusedFetch(t, http.StatusForbidden, body, payload)
	require.Equal(t, http.StatusInternalServerError, a.Status, a.Body)
	require.Equal(t, "acct_gone", account, "fetched as the connected account")
	require.ErrorIs(t, res.Err, idempotency.ErrStripeAPI)
	require.ErrorContains(t, res.Err, "HTTP 403 invalid_request_error (account_invalid): "+says)
	require.NotContains(t, res.Err.Error(), "1234")
	require.False(t, ran, "the handler does not run")
}

// deliverRefusedFetch delivers payload, a customer.subscription.updated
// event, to a synchronous Handler whose OnCurrent fetch (Retrieve, through
// a stripe-go client) the API answers status and body. It returns the
// delivery's answer, its Result, the Stripe-Account the fetch was sent
// with, and whether the handler ran.
func deliverRefusedFetch(t *testing.T, status int, body, payload []byte) (idempotencytest.Answer, idempotency.Result, string, bool) {
	t.Helper()
	var account string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		account = r.Header.Get("Stripe-Account")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	client := stripe.NewClient(fakeStripeKey, fakeBackends(srv.URL, nil))
	hs := idempotency.NewHandlers()
	ran := false
	idempotency.OnCurrent(hs, []string{"customer.subscription.updated"}, idempotency.Retrieve(client.V1Subscriptions.Retrieve),
		func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Subscription]) error {
			ran = true
			return nil
		})
	var res idempotency.Result
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(), OnResult: func(r idempotency.Result) { res = r },
	})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, payload, testSecret)
	return a, res, account, ran
}
