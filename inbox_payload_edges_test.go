package idempotency_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// A live-mode event of a connected account, with an id and metadata in
// scripts other than Latin and a body of exactly Config.MaxBodyBytes,
// next to a test-mode one with previous_attributes, goes through the
// inbox on both stores: its columns are stored as sent, List and Stats
// count it, and its handler is given the body byte for byte, the
// metadata and Previous as sent. One byte more is answered 413 and
// stores nothing.
func TestInboxPayloadEdges(t *testing.T) {
	t.Parallel()
	const (
		eventID = "evt_ünï_日本_🙂"
		account = "acct_Ω1Pgc8aB7WZ01zgkW"
		limit   = 64 << 10
	)
	// body returns invoice.paid as eventID, live, of account, with
	// metadata padded so that the body is n bytes long.
	body := func(t *testing.T, n int) []byte {
		var ev map[string]any
		require.NoError(t, json.Unmarshal(fixture(t, "invoice.paid"), &ev))
		ev["id"], ev["livemode"], ev["account"] = eventID, true, account
		md := map[string]any{"name": "Jürgen Ødegård", "city": "東京", "pad": ""}
		ev["data"].(map[string]any)["object"].(map[string]any)["metadata"] = md
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		md["pad"] = strings.Repeat("é", (n-len(b))/2) + strings.Repeat("x", (n-len(b))%2)
		b, err = json.Marshal(ev)
		require.NoError(t, err)
		require.Len(t, b, n)
		return b
	}
	for storeName, store := range bothStores(t) {
		t.Run(storeName, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var invoices []idempotency.Event[*stripe.Invoice]
			var accounts []idempotency.Event[*stripe.Account]
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
				mu.Lock()
				defer mu.Unlock()
				invoices = append(invoices, ev)
				return nil
			})
			idempotency.On(hs, "account.updated", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Account]) error {
				mu.Lock()
				defer mu.Unlock()
				accounts = append(accounts, ev)
				return nil
			})
			inbox := queueFixtures(t, store, hs, "account.updated")
			h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), MaxBodyBytes: limit})
			require.NoError(t, err)

			a := idempotencytest.Deliver(h, body(t, limit+1), testSecret)
			require.Equal(t, 413, a.Status, a.Body)
			whole := body(t, limit)
			require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, whole, testSecret).Outcome)

			rec, found, err := inbox.Lookup(t.Context(), eventID)
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, []any{"invoice.paid", "in_1Pgc6tB7WZ01zgkWu9fdqL6I", account, true, "2025-08-27.basil"},
				[]any{rec.EventType, rec.ObjectID, rec.Account, rec.Livemode, rec.APIVersion})
			live, err := inbox.List(t.Context(), idempotency.InboxFilter{ObjectID: "in_1Pgc6tB7WZ01zgkWu9fdqL6I"})
			require.NoError(t, err)
			require.Len(t, live, 1)
			require.Equal(t, eventID, live[0].EventID)
			stats, err := inbox.Stats(t.Context())
			require.NoError(t, err)
			require.Equal(t, 2, stats.Events(idempotency.InboxPending))

			n, err := inbox.WorkDue(t.Context())
			require.NoError(t, err)
			require.Equal(t, 2, n)
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, invoices, 1)
			inv := invoices[0]
			require.Equal(t, []any{eventID, account, true}, []any{inv.ID, inv.Account, inv.Livemode})
			require.Equal(t, whole, []byte(inv.Raw), "the body byte for byte")
			require.Equal(t, "東京", inv.Object.Metadata["city"])
			require.Equal(t, "Jürgen Ødegård", inv.Object.Metadata["name"])
			require.Nil(t, inv.Previous)

			require.Len(t, accounts, 1)
			acct := accounts[0]
			require.Equal(t, []any{"acct_1Pgc8aB7WZ01zgkW", "acct_1Pgc8aB7WZ01zgkW", false}, []any{acct.Account, acct.Object.ID, acct.Livemode})
			require.JSONEq(t, `{"charges_enabled": false}`, string(acct.Previous))
		})
	}
}
