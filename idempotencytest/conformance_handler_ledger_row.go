package idempotencytest

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

// testHandlerLedgerRow: the ledger row of an event the Handler applies
// holds the event's own type, object id, Connect account and livemode, in
// live mode and in test mode alike: what idemctl, ListEvents and an
// operator read to tell a live charge from a test one, and whose account
// it was.
func testHandlerLedgerRow(t *testing.T, b StoreBackend) {
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[inboxObject]) error { return nil })
	h, err := idempotency.NewHandler(b.Store, hs, idempotency.Config{Secrets: []string{inboxSecret}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	for _, tc := range []struct {
		id, account string
		live        bool
	}{
		{"evt_row_live", "acct_row_live", true},
		{"evt_row_test", "acct_row_test", false},
		{"evt_row_platform", "", true},
	} {
		event := map[string]any{
			"id": tc.id, "object": "event", "type": "invoice.paid", "created": 1756742400, "api_version": stripe.APIVersion,
			"livemode": tc.live,
			"data":     map[string]any{"object": map[string]any{"id": "in_" + tc.id, "object": "invoice"}},
		}
		if tc.account != "" { // a platform's own event has no account
			event["account"] = tc.account
		}
		payload, err := json.Marshal(event)
		require.NoError(t, err)
		a := Deliver(h, payload, inboxSecret)
		require.Equal(t, http.StatusOK, a.Status, "delivery of %s: %s", tc.id, a.Body)
		rec := requireEvent(t, b, tc.id, idempotency.OutcomeProcessed)
		require.Equal(t, idempotency.EventRecord{
			EventID: tc.id, EventType: "invoice.paid", ObjectID: "in_" + tc.id, Account: tc.account, Livemode: tc.live,
			Outcome: idempotency.OutcomeProcessed, ReceivedAt: rec.ReceivedAt, ProcessedAt: rec.ProcessedAt,
		}, rec, "the ledger row of %s", tc.id)
		require.False(t, rec.ReceivedAt.IsZero(), "the ledger row of %s has no ReceivedAt", tc.id)
	}
}
