package idempotency_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRetrieveAccountInPath: Retrieve of a stripe-go method whose path
// names the connected account (a capability's, a person's:
// /v1/accounts/{account}/capabilities/{id}) puts the event's account in
// that path as well as in Stripe-Account, so that an OnCurrent handler of
// capability.updated or person.updated fetches the account's object, its
// id repeated in every account (card_payments) told apart. The path had
// no account (/v1/accounts//capabilities/card_payments), which Stripe
// does not know, and every such event failed until it was dead-lettered.
// An event of no account (the platform's own object), or whose thin
// context names several, is refused before any request, saying so. A
// card's or a bank account's method, whose object may be a customer's
// source as well as an external account, is left as stripe-go builds it:
// stripe-go refuses it.
func TestRetrieveAccountInPath(t *testing.T) {
	t.Parallel()
	var (
		mu      sync.Mutex
		headers []string
	)
	mux := http.NewServeMux()
	for _, kind := range []string{"capabilities", "persons", "external_accounts"} {
		mux.HandleFunc("GET /v1/accounts/{account}/"+kind+"/{id}", func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			headers = append(headers, r.Header.Get("Stripe-Account"))
			mu.Unlock()
			object := map[string]string{"capabilities": "capability", "persons": "person", "external_accounts": "bank_account"}[kind]
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]string{"id": r.PathValue("id"), "object": object, "account": r.PathValue("account")})
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		idempotencytest.WriteStripeError(w, http.StatusNotFound, "", "Unrecognized request URL (GET: "+r.URL.Path+").")
	})
	client := idempotencytest.NewStripeClient("sk_test_123", mux)

	capability := idempotency.Retrieve(client.V1Capabilities.Retrieve)
	for _, account := range []string{"acct_A", "acct_B"} {
		got, err := capability(t.Context(), "card_payments", account)
		require.NoError(t, err)
		require.Equal(t, "card_payments", got.ID)
		require.NotNil(t, got.Account)
		require.Equal(t, account, got.Account.ID)
	}
	person, err := idempotency.Retrieve(client.V1Persons.Retrieve)(t.Context(), "person_1", "acct_A")
	require.NoError(t, err)
	require.Equal(t, "person_1", person.ID)
	require.Equal(t, "acct_A", person.Account)
	_, err = idempotency.Retrieve(client.V1BankAccounts.Retrieve)(t.Context(), "ba_1", "acct_A")
	require.Error(t, err, "an external account or a customer's source: not guessed")
	require.NotErrorIs(t, err, idempotency.ErrObjectNotFound)
	mu.Lock()
	require.Equal(t, []string{"acct_A", "acct_B", "acct_A"}, headers, "fetched as the account")
	mu.Unlock()

	// The platform's own event, or a thin event's context of several
	// accounts: no one account to put in the path. Refused before any
	// request, saying why, not sent as /v1/accounts//capabilities/...,
	// whose 404 would say nothing of the cause.
	for _, account := range []string{"", "acct_A/acct_B"} {
		_, err = capability(t.Context(), "card_payments", account)
		require.ErrorContains(t, err, "the method's path names one connected account", "account %q", account)
		require.ErrorContains(t, err, "FetchFunc of your own")
		require.NotErrorIs(t, err, idempotency.ErrObjectNotFound)
	}
	mu.Lock()
	require.Len(t, headers, 3, "no request for an event without one account")
	mu.Unlock()

	// Through an inbox: capability.updated of two accounts, one id.
	hs := idempotency.NewHandlers()
	var (
		seenMu sync.Mutex
		seen   = map[string]string{}
	)
	idempotency.OnCurrent(hs, []string{"capability.updated"}, capability,
		func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Capability]) error {
			seenMu.Lock()
			defer seenMu.Unlock()
			seen[ev.Account] = ev.Object.Account.ID
			return nil
		})
	clock := idempotencytest.NewClock(time.Now())
	inbox, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{Now: clock.Now})
	require.NoError(t, err)
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Now: clock.Now})
	require.NoError(t, err)
	payload := fixture(t, "capability.updated")
	for i, account := range []string{"acct_A", "acct_B"} {
		ev := idempotencytest.Derive(payload, map[string]any{"id": "evt_cap_" + account, "account": account, "data.object.account": account, "created": clock.Now().Unix() - int64(i)})
		require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, ev, testSecret).Outcome)
	}
	_, err = inbox.WorkDue(t.Context())
	require.NoError(t, err)
	for _, account := range []string{"acct_A", "acct_B"} {
		rec, ok, err := inbox.Lookup(t.Context(), "evt_cap_"+account)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, idempotency.InboxProcessed, rec.State, rec.LastError)
	}
	require.Equal(t, map[string]string{"acct_A": "acct_A", "acct_B": "acct_B"}, seen)
}
