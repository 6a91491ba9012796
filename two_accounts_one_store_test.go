package idempotency_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// oneAccountAPI serves GET /v1/subscriptions/{id} as one Stripe account
// does: its own subscriptions, and 404 resource_missing for any other,
// another account's included.
type oneAccountAPI struct{ own string }

func (a oneAccountAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/v1/subscriptions/")
	if id != a.own {
		idempotencytest.WriteStripeError(w, http.StatusNotFound, "resource_missing", "No such subscription: '"+id+"'")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "subscription", "status": "active"})
}

// TestInboxesOfOneStoreApplyEachOthersEvents: a service with two Stripe
// accounts (US, EU) and an Inbox for each, with its own Handlers and API
// key. On one store (one schema), the US inbox's workers take the event
// the EU endpoint stored, fetch its object with the US key, are answered
// 404, and the event ends skipped, the EU handler never run: what the
// README's "Two Stripe accounts in one service" says, and why it gives
// each account a store of its own. On two stores each inbox applies its
// own events alone. On both stores.
func TestInboxesOfOneStoreApplyEachOthersEvents(t *testing.T) {
	t.Parallel()
	const usSecret, euSecret = "whsec_us_account", "whsec_eu_account"
	type account struct {
		inbox *idempotency.Inbox
		h     *idempotency.Handler
	}
	setUp := func(t *testing.T, usStore, euStore idempotency.Store, clock *idempotencytest.Clock, applied *sync.Map) (us, eu account) {
		open := func(name, own, secret string, store idempotency.Store) account {
			client := idempotencytest.NewStripeClient("sk_test_"+name, oneAccountAPI{own: own})
			hs := idempotency.NewHandlers()
			idempotency.OnCurrent(hs, []string{"customer.subscription.updated"},
				idempotency.Retrieve(client.V1Subscriptions.Retrieve),
				func(_ context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Subscription]) error {
					applied.Store(tx.EventID(), name)
					return nil
				})
			inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger()})
			require.NoError(t, err)
			h, err := inbox.Handler(idempotency.Config{Secrets: []string{secret}, Mode: idempotency.ModeTest, Logger: discardLogger()})
			require.NoError(t, err)
			return account{inbox, h}
		}
		return open("us", "sub_us", usSecret, usStore), open("eu", "sub_eu", euSecret, euStore)
	}
	deliverEU := func(t *testing.T, eu account) {
		a := idempotencytest.Deliver(eu.h, subscriptionEvent(t, "evt_eu", "sub_eu"), euSecret)
		require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	}

	for name, store := range bothStores(t) {
		t.Run(name+"/one store", func(t *testing.T) {
			t.Parallel()
			var applied sync.Map
			clock := idempotencytest.NewClock(time.Now())
			us, eu := setUp(t, store, store, clock, &applied)
			deliverEU(t, eu)
			n, err := us.inbox.WorkDue(t.Context()) // the US inbox's workers
			require.NoError(t, err)
			require.Equal(t, 1, n, "the US inbox's workers take the EU event")
			rec, ok, err := eu.inbox.Lookup(t.Context(), "evt_eu")
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, idempotency.InboxSkipped, rec.State, "fetched with the US key: 404, skipped")
			_, ran := applied.Load("evt_eu")
			require.False(t, ran, "no handler ran for the EU event")
			n, err = eu.inbox.WorkDue(t.Context())
			require.NoError(t, err)
			require.Zero(t, n, "nothing is left for the EU inbox")
		})
	}
	usStores, euStores := bothStores(t), bothStores(t)
	for name, usStore := range usStores {
		t.Run(name+"/a store each", func(t *testing.T) {
			t.Parallel()
			var applied sync.Map
			clock := idempotencytest.NewClock(time.Now())
			us, eu := setUp(t, usStore, euStores[name], clock, &applied)
			deliverEU(t, eu)
			n, err := us.inbox.WorkDue(t.Context())
			require.NoError(t, err)
			require.Zero(t, n, "the US inbox has nothing to do")
			n, err = eu.inbox.WorkDue(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, n)
			by, ran := applied.Load("evt_eu")
			require.True(t, ran)
			require.Equal(t, "eu", by)
		})
	}
}
