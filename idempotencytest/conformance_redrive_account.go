package idempotencytest

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

// testInboxRedriveByAccount: RedriveFilter.Account and ObjectID select as
// InboxFilter's do. Account keeps one connected account's events; ObjectID
// alone takes the object's events under every account and the platform's
// (Stripe reuses a capability's id, card_payments, in every account); both
// together the object's events of that account. A dry run counts what the
// redrive moves. A value no store keeps, or an account or object with
// Kind task (a task has neither), is refused naming the field, and
// nothing moves.
func testInboxRedriveByAccount(t *testing.T, b StoreBackend) {
	ib := newInboxBench(t, b, idempotency.InboxConfig{MaxAttempts: 1}, func(string, int) error { return errDownstream })
	events := []struct{ id, account, object string }{
		{"evt_ra_a1", "acct_A", "in_ra_a"},
		{"evt_ra_a2", "acct_A", "card_payments"},
		{"evt_ra_b1", "acct_B", "card_payments"},
		{"evt_ra_b2", "acct_B", "in_ra_b"},
		{"evt_ra_p", "", "card_payments"},
	}
	for _, e := range events {
		body, err := json.Marshal(map[string]any{
			"id": e.id, "object": "event", "type": "invoice.paid", "created": 1756742400, "api_version": stripe.APIVersion,
			"livemode": false, "account": e.account,
			"data": map[string]any{"object": map[string]any{"id": e.object, "object": "invoice"}},
		})
		require.NoError(t, err)
		a := Deliver(ib.h, body, inboxSecret)
		require.Equal(t, http.StatusOK, a.Status, a.Body)
	}
	ib.work(t, len(events)) // one attempt each: dead-lettered
	allDead := map[idempotency.InboxState]int{idempotency.InboxDeadLetter: len(events)}
	require.Equal(t, allDead, ib.counts(t))

	for _, c := range []struct {
		field string
		f     idempotency.RedriveFilter
	}{
		{"RedriveFilter.Account", idempotency.RedriveFilter{Account: "acct_\xff"}},
		{"RedriveFilter.ObjectID", idempotency.RedriveFilter{ObjectID: "card_\x00payments"}},
		{"RedriveFilter.Account", idempotency.RedriveFilter{Kind: idempotency.KindTask, Account: "acct_A"}},
		{"RedriveFilter.ObjectID", idempotency.RedriveFilter{Kind: idempotency.KindTask, ObjectID: "card_payments"}},
	} {
		_, err := ib.inbox.Redrive(ctxT(t), c.f)
		require.ErrorContains(t, err, c.field)
	}
	require.Equal(t, allDead, ib.counts(t), "a refused redrive moves nothing")

	redrive := func(f idempotency.RedriveFilter) int {
		t.Helper()
		events, tasks, err := ib.inbox.RedriveByKind(ctxT(t), f)
		require.NoError(t, err)
		require.Zero(t, tasks)
		return events
	}
	dead := func() []string {
		t.Helper()
		return listIDs(t, ib.inbox, idempotency.InboxFilter{States: []idempotency.InboxState{idempotency.InboxDeadLetter}})
	}
	for _, c := range []struct {
		f    idempotency.RedriveFilter
		want []string // moved
	}{
		{idempotency.RedriveFilter{ObjectID: "card_payments"}, []string{"evt_ra_a2", "evt_ra_b1", "evt_ra_p"}},
		{idempotency.RedriveFilter{Account: "acct_A"}, []string{"evt_ra_a1", "evt_ra_a2"}},
		{idempotency.RedriveFilter{ObjectID: "card_payments", Account: "acct_B"}, []string{"evt_ra_b1"}},
		{idempotency.RedriveFilter{Account: "acct_C"}, nil},
		{idempotency.RedriveFilter{ObjectID: "in_ra_a", Account: "acct_B"}, nil},
	} {
		dry := c.f
		dry.DryRun = true
		require.Equal(t, len(c.want), redrive(dry), "dry run of %+v", c.f)
		require.Equal(t, allDead, ib.counts(t), "a dry run moves nothing")
		require.Equal(t, len(c.want), redrive(c.f), "%+v", c.f)
		for _, e := range events {
			want := idempotency.InboxDeadLetter
			for _, id := range c.want {
				if id == e.id {
					want = idempotency.InboxPending
				}
			}
			require.Equal(t, want, ib.record(t, e.id).State, "%s after %+v", e.id, c.f)
		}
		ib.work(t, len(c.want)) // dead-lettered again
		require.Len(t, dead(), len(events))
	}
}
