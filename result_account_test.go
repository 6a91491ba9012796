package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestResultNamesTheAccount: a Connect event's Result, a delivery's and
// an inbox attempt's, has its connected account, and the line logged of
// it says account=...: a capability's id, card_payments, is the same in
// every account, and an error such as a 403 account_invalid quotes
// nothing of Stripe's answer, so the line named no account at all. The
// platform's own event logs none.
func TestResultNamesTheAccount(t *testing.T) {
	t.Parallel()
	ev := parseFixture(t, fixture(t, "capability.updated"))
	require.NotEmpty(t, ev.Account)
	require.Equal(t, "card_payments", ev.Data.Object.ID)
	var platform map[string]any
	require.NoError(t, json.Unmarshal(fixture(t, "capability.updated"), &platform))
	delete(platform, "account")
	platform["id"] = "evt_platform_card_payments"
	own, err := json.Marshal(platform)
	require.NoError(t, err)
	for storeName, store := range bothStores(t) {
		t.Run(storeName, func(t *testing.T) {
			t.Parallel()
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "capability.updated", func(_ context.Context, tx idempotency.Tx, _ idempotency.Event[json.RawMessage]) error {
				if tx.EventID() == "evt_applied_card_payments" {
					return nil
				}
				return errors.New("downstream refused")
			})
			var mu sync.Mutex
			var results []idempotency.Result
			onResult := func(r idempotency.Result) {
				mu.Lock()
				defer mu.Unlock()
				results = append(results, r)
			}
			logger, logs := testLogger()
			h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: logger, OnResult: onResult})
			require.NoError(t, err)
			a := idempotencytest.Deliver(h, fixture(t, "capability.updated"), testSecret)
			require.Equal(t, http.StatusInternalServerError, a.Status)
			a = idempotencytest.Deliver(h, own, testSecret)
			require.Equal(t, http.StatusInternalServerError, a.Status)
			applied := eventWith(t, eventWith(t, fixture(t, "capability.updated"), "id", "evt_applied_card_payments"), "created", time.Now().Add(-time.Hour).Unix())
			a = idempotencytest.Deliver(h, applied, testSecret)
			require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)

			clock := idempotencytest.NewClock(time.Now())
			inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: clock.Now, Logger: logger, OnResult: onResult})
			require.NoError(t, err)
			ih, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: logger})
			require.NoError(t, err)
			queued := eventWith(t, fixture(t, "capability.updated"), "id", "evt_queued_card_payments")
			require.Equal(t, http.StatusOK, idempotencytest.Deliver(ih, queued, testSecret).Status)
			_, err = inbox.WorkDue(t.Context())
			require.NoError(t, err)

			mu.Lock()
			defer mu.Unlock()
			require.Len(t, results, 4)
			byID := map[string]idempotency.Result{}
			for _, r := range results {
				byID[r.EventID] = r
			}
			require.Equal(t, ev.Account, byID[ev.ID].Account, "a delivery's")
			require.Empty(t, byID["evt_platform_card_payments"].Account, "the platform's own")
			require.Equal(t, ev.Account, byID["evt_queued_card_payments"].Account, "an inbox attempt's")
			require.Equal(t, 1, byID["evt_queued_card_payments"].Attempt)

			// A recovered event's, as RecoverOptions.OnEvent gets it.
			api := idempotencytest.NewV1Events()
			api.Add(eventWith(t, eventWith(t, fixture(t, "capability.updated"), "id", "evt_recovered_card_payments"), "created", time.Now().Add(-time.Hour).Unix()))
			var recovered []idempotency.Result
			_, err = h.Recover(t.Context(), idempotencytest.NewStripeClient("sk_test_recover", api), idempotency.RecoverOptions{
				Since: time.Now().Add(-2 * time.Hour), Account: ev.Account, RequestsPerSecond: 100,
				OnEvent: func(r idempotency.Result) { recovered = append(recovered, r) },
			})
			require.NoError(t, err)
			require.Len(t, recovered, 1)
			require.Equal(t, ev.Account, recovered[0].Account, "a recovered event's")
			// The event a delivery applied already, listed: a duplicate; and
			// the inbox's failed event, listed: failed again.
			api.Add(applied)
			api.Add(eventWith(t, queued, "created", time.Now().Add(-time.Hour).Unix()))
			recovered = nil
			_, err = h.Recover(t.Context(), idempotencytest.NewStripeClient("sk_test_recover", api), idempotency.RecoverOptions{
				Since: time.Now().Add(-2 * time.Hour), Account: ev.Account, RequestsPerSecond: 100,
				OnEvent: func(r idempotency.Result) { recovered = append(recovered, r) },
			})
			require.NoError(t, err)
			require.Len(t, recovered, 3)
			outcomes := map[string]idempotency.Outcome{}
			for _, r := range recovered {
				require.Equal(t, ev.Account, r.Account, "%s, %s", r.EventID, r.Outcome)
				outcomes[r.EventID] = r.Outcome
			}
			require.Equal(t, map[string]idempotency.Outcome{
				"evt_recovered_card_payments": idempotency.OutcomeFailed,
				"evt_applied_card_payments":   idempotency.OutcomeDuplicate,
				"evt_queued_card_payments":    idempotency.OutcomeFailed,
			}, outcomes)

			lines := map[string]map[string]any{}
			dec := json.NewDecoder(strings.NewReader(logs.String()))
			for dec.More() {
				var line map[string]any
				require.NoError(t, dec.Decode(&line))
				if id, ok := line["event_id"].(string); ok && line["error"] != nil {
					lines[id+" "+line["msg"].(string)] = line
				}
			}
			for _, id := range []string{
				ev.ID + " stripe webhook",
				"evt_queued_card_payments stripe webhook: inbox attempt",
				"evt_recovered_card_payments stripe recovery: event failed; the checkpoint stays before it",
				"evt_queued_card_payments stripe recovery: event failed; the checkpoint stays before it",
			} {
				require.Contains(t, lines, id)
				require.Equal(t, ev.Account, lines[id]["account"], id)
			}
			require.Contains(t, lines, "evt_platform_card_payments stripe webhook")
			require.NotContains(t, lines["evt_platform_card_payments stripe webhook"], "account")
		})
	}
}
