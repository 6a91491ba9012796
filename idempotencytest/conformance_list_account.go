package idempotencytest

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

// testInboxListByAccount: an object id alone selects the object under every
// connected account (and the platform's); with Account, List keeps that
// account's events only. An Account that is not text is refused, naming
// the field, and so is an Account or ObjectID with Kind task.
func testInboxListByAccount(t *testing.T, b StoreBackend) {
	ib := newInboxBench(t, b, idempotency.InboxConfig{}, nil)
	for _, e := range []struct{ id, account string }{
		{"evt_acct_a", "acct_A"}, {"evt_acct_b", "acct_B"}, {"evt_acct_platform", ""},
	} {
		body, err := json.Marshal(map[string]any{
			"id": e.id, "object": "event", "type": "invoice.paid", "created": 1756742400, "api_version": stripe.APIVersion,
			"livemode": false, "account": e.account,
			"data": map[string]any{"object": map[string]any{"id": "card_payments", "object": "capability"}},
		})
		require.NoError(t, err)
		a := Deliver(ib.h, body, inboxSecret)
		require.Equal(t, http.StatusOK, a.Status, a.Body)
	}
	require.ElementsMatch(t, []string{"evt_acct_a", "evt_acct_b", "evt_acct_platform"},
		listIDs(t, ib.inbox, idempotency.InboxFilter{ObjectID: "card_payments"}), "ObjectID alone spans the accounts")
	require.Equal(t, []string{"evt_acct_b"}, listIDs(t, ib.inbox, idempotency.InboxFilter{ObjectID: "card_payments", Account: "acct_B"}))
	require.Equal(t, []string{"evt_acct_a"}, listIDs(t, ib.inbox, idempotency.InboxFilter{Account: "acct_A"}))
	require.Empty(t, listIDs(t, ib.inbox, idempotency.InboxFilter{Account: "acct_C"}))
	_, err := ib.inbox.List(ctxT(t), idempotency.InboxFilter{Account: "acct_\xff"})
	require.ErrorContains(t, err, "InboxFilter.Account")
	// A task has no object or account: with Kind task they are refused,
	// as Redrive refuses them, not answered with an empty list that reads
	// as "no such task".
	for field, f := range map[string]idempotency.InboxFilter{
		"InboxFilter.Account":  {Kind: idempotency.KindTask, Account: "acct_A"},
		"InboxFilter.ObjectID": {Kind: idempotency.KindTask, ObjectID: "card_payments"},
	} {
		_, err := ib.inbox.List(ctxT(t), f)
		require.ErrorContains(t, err, field+": a task has no ")
	}
}
