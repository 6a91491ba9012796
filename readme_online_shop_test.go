package idempotency_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// registerShop is the README's Register (Writing handlers, "An online
// shop"), as it is there: TestReadmeOnlineShop fails when the two differ.
func registerShop(hs *idempotency.Handlers) {
	fulfil := idempotency.NewAction(hs, idempotency.ActionSpec{
		Name: "fulfil-order", Key: "order id",
		Owners: []string{"checkout.session.completed", "checkout.session.async_payment_succeeded", "payment_intent.succeeded"},
	}, func(ctx context.Context, tx idempotency.Tx, order string, _ struct{}) error {
		_, err := idempotency.PgxTx(tx).Exec(ctx, `WITH paid AS (UPDATE orders SET status = 'paid' WHERE id = $1)
INSERT INTO shipments (order_id) VALUES ($1)`, order)
		return err
	})
	session := func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.CheckoutSession]) error {
		cs, order := ev.Object, ev.Object.Metadata["order_id"]
		switch {
		case order == "":
			return idempotency.Skip("checkout session without metadata.order_id")
		case ev.Type == "checkout.session.async_payment_failed":
			_, err := idempotency.PgxTx(tx).Exec(ctx, `UPDATE orders SET status = 'failed' WHERE id = $1 AND status = 'pending'`, order)
			return err
		case cs.PaymentStatus == stripe.CheckoutSessionPaymentStatusUnpaid:
			return nil // a delayed payment method: async_payment_succeeded or _failed follows
		case cs.PaymentIntent != nil: // paid; nil when no payment was required
			if _, err := idempotency.PgxTx(tx).Exec(ctx, `UPDATE orders SET payment_intent = $2 WHERE id = $1`, order, cs.PaymentIntent.ID); err != nil {
				return err
			}
		}
		_, err := fulfil.Do(ctx, tx, order, struct{}{}) // false when another event shipped it
		return err
	}
	for _, typ := range []string{"checkout.session.completed", "checkout.session.async_payment_succeeded", "checkout.session.async_payment_failed"} {
		idempotency.On(hs, typ, session)
	}
	idempotency.On(hs, "payment_intent.succeeded", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.PaymentIntent]) error {
		order := ev.Object.Metadata["order_id"] // from payment_intent_data.metadata
		if order == "" {
			return idempotency.Skip("payment intent without metadata.order_id")
		}
		if _, err := idempotency.PgxTx(tx).Exec(ctx, `UPDATE orders SET payment_intent = $2 WHERE id = $1`, order, ev.Object.ID); err != nil {
			return err
		}
		_, err := fulfil.Do(ctx, tx, order, struct{}{})
		return err
	})
	idempotency.On(hs, "charge.refunded", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Charge]) error {
		ch := ev.Object
		if ch.PaymentIntent == nil {
			return idempotency.Skip("charge without a payment intent")
		}
		tag, err := idempotency.PgxTx(tx).Exec(ctx, `UPDATE orders SET refunded = GREATEST(refunded, $2) WHERE payment_intent = $1`,
			ch.PaymentIntent.ID, ch.AmountRefunded) // the total so far: the largest wins, in any order
		if err == nil && tag.RowsAffected() == 0 {
			err = errors.New("no order has the charge's payment intent yet") // rolled back, retried
		}
		return err
	})
}

// shopEvent is the fixture name as an event id of type typ, created at
// created, with the fields of its data.object in set.
func shopEvent(t *testing.T, name, id, typ string, created int64, set map[string]any) []byte {
	t.Helper()
	fields := map[string]any{"id": id, "type": typ, "created": created}
	for k, v := range set {
		fields["data.object."+k] = v
	}
	return idempotencytest.Derive(fixture(t, name), fields)
}

// TestReadmeOnlineShop holds the README's online shop to PostgreSQL:
// each order's events delivered newest first, each twice at once, and
// what failed delivered again, as Stripe does. A card order and a delayed
// payment that succeeds ship once, whichever of their events means paid
// comes first (the PaymentIntent's for the card, the session's for the
// delayed payment), and keep the charge's final amount_refunded after two
// partial refunds in reverse order (the first of them before any event
// named the order's PaymentIntent); a delayed payment that fails ships
// nothing; a session with no payment required ships once. An order
// paid by a second session after the first one's delayed payment failed
// keeps the PaymentIntent that paid, which its refund finds, though the
// failed session's events come last.
func TestReadmeOnlineShop(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	var register string
	for _, block := range readmeGoBlocks(string(readme)) {
		if block.name == "### An online shop: Checkout, delayed payments, refunds #1" {
			_, register, _ = strings.Cut(block.src, "\nfunc Register(")
		}
	}
	require.NotEmpty(t, register, "the README's online shop has Register")
	self, err := os.ReadFile("readme_online_shop_test.go")
	require.NoError(t, err)
	require.True(t, strings.Contains(string(self), "\nfunc registerShop("+register),
		"registerShop differs from the README's Register (Writing handlers, An online shop): copy the README's here")

	ctx := t.Context()
	b := newPgBackend(t, idempotency.PgxConfig{})
	_, err = b.db.Pool.Exec(ctx, `CREATE TABLE orders (id text PRIMARY KEY, status text NOT NULL DEFAULT 'pending', payment_intent text UNIQUE, refunded bigint NOT NULL DEFAULT 0);
CREATE TABLE shipments (order_id text NOT NULL REFERENCES orders);
INSERT INTO orders (id) VALUES ('ord_card'), ('ord_async_ok'), ('ord_async_failed'), ('ord_retried'), ('ord_free')`)
	require.NoError(t, err)
	hs := idempotency.NewHandlers()
	registerShop(hs)
	h, err := idempotency.NewHandler(b.store, hs, idempotency.Config{Secrets: []string{testSecret}})
	require.NoError(t, err)

	const at = 1756749660
	session := func(order, id, typ, status string, created int64) []byte {
		return shopEvent(t, "checkout.session.completed", id, typ, created, map[string]any{
			"id": "cs_" + order, "payment_status": status, "payment_intent": "pi_" + order, "metadata": map[string]string{"order_id": order}})
	}
	intent := func(order string, created int64) []byte {
		return shopEvent(t, "payment_intent.succeeded", "evt_pi_"+order, "payment_intent.succeeded", created, map[string]any{
			"id": "pi_" + order, "metadata": map[string]string{"order_id": order}})
	}
	refund := func(order, id string, total, created int64) []byte {
		return shopEvent(t, "charge.refunded", id, "charge.refunded", created, map[string]any{
			"id": "ch_" + order, "payment_intent": "pi_" + order, "amount": 3000, "amount_captured": 3000,
			"amount_refunded": total, "refunded": false})
	}
	orders := map[string][][]byte{ // oldest first
		"ord_card": {session("ord_card", "evt_cs_card", "checkout.session.completed", "paid", at), intent("ord_card", at),
			refund("ord_card", "evt_r1_card", 1000, at+60), refund("ord_card", "evt_r2_card", 2500, at+120)},
		"ord_async_ok": {session("ord_async_ok", "evt_cs_ok", "checkout.session.completed", "unpaid", at),
			intent("ord_async_ok", at+3600), session("ord_async_ok", "evt_as_ok", "checkout.session.async_payment_succeeded", "paid", at+3600),
			refund("ord_async_ok", "evt_r1_ok", 1000, at+7200), refund("ord_async_ok", "evt_r2_ok", 2500, at+7200)},
		"ord_async_failed": {session("ord_async_failed", "evt_cs_failed", "checkout.session.completed", "unpaid", at),
			session("ord_async_failed", "evt_af_failed", "checkout.session.async_payment_failed", "unpaid", at+3600)},
		"ord_retried": {
			shopEvent(t, "checkout.session.completed", "evt_cs1_retried", "checkout.session.completed", at, map[string]any{
				"id": "cs_ord_retried_1", "payment_status": "unpaid", "payment_intent": "pi_ord_retried_1", "metadata": map[string]string{"order_id": "ord_retried"}}),
			shopEvent(t, "checkout.session.completed", "evt_af1_retried", "checkout.session.async_payment_failed", at+3600, map[string]any{
				"id": "cs_ord_retried_1", "payment_status": "unpaid", "payment_intent": "pi_ord_retried_1", "metadata": map[string]string{"order_id": "ord_retried"}}),
			session("ord_retried", "evt_cs2_retried", "checkout.session.completed", "paid", at+3700), intent("ord_retried", at+3700),
			refund("ord_retried", "evt_r1_retried", 1000, at+7200)},
		"ord_free": {shopEvent(t, "checkout.session.completed", "evt_cs_free", "checkout.session.completed", at, map[string]any{
			"id": "cs_ord_free", "payment_status": "no_payment_required", "payment_intent": nil, "metadata": map[string]string{"order_id": "ord_free"}})},
	}
	for _, events := range orders {
		var again [][]byte
		for i := len(events) - 1; i >= 0; i-- {
			answers := idempotencytest.Replay(h, events[i], testSecret, 2)
			if answers.Statuses()[http.StatusOK] == 0 {
				again = append(again, events[i])
			}
		}
		for _, ev := range again {
			require.Equal(t, http.StatusOK, idempotencytest.Deliver(h, ev, testSecret).Status)
		}
	}
	for order, want := range map[string]struct {
		status   string
		refunded int64
		shipped  int
	}{
		"ord_card":         {"paid", 2500, 1},
		"ord_async_ok":     {"paid", 2500, 1},
		"ord_async_failed": {"failed", 0, 0},
		"ord_retried":      {"paid", 1000, 1},
		"ord_free":         {"paid", 0, 1},
	} {
		var status string
		var refunded int64
		var shipped int
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT status, refunded, (SELECT count(*) FROM shipments WHERE order_id = $1) FROM orders WHERE id = $1`, order).
			Scan(&status, &refunded, &shipped))
		require.Equal(t, want.status, status, order)
		require.Equal(t, want.refunded, refunded, order)
		require.Equal(t, want.shipped, shipped, order)
	}
}
