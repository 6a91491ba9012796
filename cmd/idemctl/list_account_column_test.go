package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestTablesShowTheAccount: list's and ledger's tables have an ACCOUNT
// column, "-" for the platform's own events and for tasks, so that
// -object alone, which spans every connected account, tells apart the
// rows of an id Stripe reuses in every account (a capability's
// card_payments). The tables had no such column: the rows of two
// accounts' objects read the same.
func TestTablesShowTheAccount(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)
	require.Equal(t, idempotency.OutcomeQueued, s.deliverRaw(t, accountEventPayload(t, "evt_paid_2_other", "invoice.paid", "in_2", "acct_other", s.clock().Unix())))
	s.work(t, s.inbox)

	r := idemctl(t, s.db, nil, "list", "-object", "in_2")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^ID\s+KIND\s+TYPE\s+OBJECT\s+ACCOUNT\s+STATE\s+ATTEMPTS\s+RECEIVED\s+DUE\s+LAST ERROR\n`, r.stdout)
	require.Regexp(t, `(?m)^evt_paid_2_other\s+event\s+invoice\.paid\s+in_2\s+acct_other\s+processed\s`, r.stdout)
	require.Regexp(t, `(?m)^evt_paid_2\s+event\s+invoice\.paid\s+in_2\s+-\s+processed\s`, r.stdout)
	require.Len(t, lines(r.stdout), 3)

	r = idemctl(t, s.db, nil, "list", "-kind", "task")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^task:send-receipt:in_1\s+task\s+send-receipt\s+-\s+-\s+processed\s`, r.stdout)

	r = idemctl(t, s.db, nil, "ledger", "-object", "in_2")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^ID\s+TYPE\s+OBJECT\s+ACCOUNT\s+OUTCOME\s+RECEIVED\s+PROCESSED\s+SKIP REASON\n`, r.stdout)
	require.Regexp(t, `(?m)^evt_paid_2_other\s+invoice\.paid\s+in_2\s+acct_other\s+processed\s`, r.stdout)
	require.Regexp(t, `(?m)^evt_paid_2\s+invoice\.paid\s+in_2\s+-\s+processed\s`, r.stdout)
}
