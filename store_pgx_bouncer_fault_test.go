package idempotency_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestPgxBouncerBackendTerminated is TestPgxBackendTerminated behind
// PgBouncer in transaction pooling mode: the server session of a delivery
// in its transaction ends (pg_terminate_backend), while its client
// connection is PgBouncer's. The delivery is answered 5xx with nothing
// kept, Stripe's retry applies the event once, and the deliveries after it
// are served as before.
func TestPgxBouncerBackendTerminated(t *testing.T) {
	t.Parallel()
	a := newBouncerApp(t, 1, idempotency.PgxConfig{})
	pids, release := make(chan int32, 1), make(chan struct{})
	hold := true
	// invoice.payment_succeeded credits as invoice.paid does; its first
	// run reports its server session and waits inside the transaction.
	idempotency.On(a.hs, "invoice.payment_succeeded", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID)
		if err != nil || !first {
			return err
		}
		q := idempotency.PgxTx(tx)
		if _, err := q.Exec(ctx, `INSERT INTO `+a.accounts+` AS a (id, credits) VALUES ($1, 100)
ON CONFLICT (id) DO UPDATE SET credits = a.credits + 100`, ev.Object.Metadata["account_id"]); err != nil {
			return err
		}
		if hold {
			hold = false
			return holdSession(ctx, tx, pids, release)
		}
		return nil
	})
	h, err := idempotency.NewHandler(a.stores[0], a.hs, a.config())
	require.NoError(t, err)
	payload := eventPayload(t, "invoice.payment_succeeded", "evt_bnc_kill", map[string]string{"account_id": "acct_bnc_kill"})

	done := make(chan idempotencytest.Answer, 1)
	go func() { done <- idempotencytest.Deliver(h, payload, testSecret) }()
	pid := recv(t, pids, "the delivery inside its transaction")
	var terminated bool
	require.NoError(t, pgtest.AdminPool(t).QueryRow(t.Context(), `SELECT pg_terminate_backend($1)`, pid).Scan(&terminated))
	require.True(t, terminated)
	close(release)
	ans := recv(t, done, "the delivery whose session ended")
	require.GreaterOrEqual(t, ans.Status, 500, ans.Body)
	t.Logf("the delivery whose server session ended: %d %s", ans.Status, ans.Body)
	require.Zero(t, a.credits(t, "acct_bnc_kill"))
	require.Zero(t, a.ledgerSize(t))

	ans = idempotencytest.Deliver(h, payload, testSecret)
	require.Equal(t, idempotency.OutcomeProcessed, ans.Outcome, ans.Body)
	require.Equal(t, idempotency.OutcomeDuplicate, idempotencytest.Deliver(h, payload, testSecret).Outcome)
	require.Equal(t, 100, a.credits(t, "acct_bnc_kill"))
	for i := range 20 {
		p := invoicePayload(t, fmt.Sprintf("evt_bnc_after_%d", i), fmt.Sprintf("in_bnc_after_%d", i), "acct_bnc_after")
		require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, p, testSecret).Outcome, "delivery %d after", i)
	}
	require.Equal(t, 2000, a.credits(t, "acct_bnc_after"))
	require.Equal(t, 21, a.ledgerSize(t))
	require.NotContains(t, a.logs.String(), "prepared statement")
}
