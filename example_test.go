package idempotency_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// A handler for invoice.paid that credits an account once per invoice,
// tested on the memory store: the first delivery is processed, the same
// delivery again is a duplicate, and a second event about the same invoice
// is processed without a second credit.
func ExampleOn() {
	credits := map[string]int{}
	hs := idempotency.NewHandlers()
	credit := func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID)
		if err != nil || !first {
			return err
		}
		account := ev.Object.Metadata["account_id"]
		tx.AfterCommit(func(context.Context) { credits[account] += 100 }) // a fake of the accounts table
		return nil
	}
	idempotency.On(hs, "invoice.paid", credit)
	idempotency.On(hs, "invoice.payment_succeeded", credit)

	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{"whsec_test"},
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	event := func(id, typ string) []byte {
		b, _ := json.Marshal(map[string]any{
			"id": id, "object": "event", "type": typ, "created": 1756742403, "api_version": stripe.APIVersion,
			"data": map[string]any{"object": map[string]any{
				"id": "in_1", "object": "invoice", "metadata": map[string]string{"account_id": "acct_1"},
			}},
		})
		return b
	}
	for _, payload := range [][]byte{
		event("evt_1", "invoice.paid"),
		event("evt_1", "invoice.paid"),
		event("evt_2", "invoice.payment_succeeded"),
	} {
		a := idempotencytest.Deliver(h, payload, "whsec_test")
		fmt.Println(a.Status, a.Outcome, credits["acct_1"])
	}
	// Output:
	// 200 processed 100
	// 200 duplicate 100
	// 200 processed 100
}

// An action declared once and owned by the two invoice events; the
// ownership table lists it.
func ExampleNewAction() {
	hs := idempotency.NewHandlers()
	grant := idempotency.NewAction(hs, idempotency.ActionSpec{
		Name:   "grant-plan",
		Key:    "invoice id",
		Owners: []string{"invoice.paid", "invoice.payment_succeeded"},
	}, func(ctx context.Context, tx idempotency.Tx, invoiceID string, account string) error {
		_, err := idempotency.PgxTx(tx).Exec(ctx, `UPDATE accounts SET plan = 'pro' WHERE id = $1`, account)
		return err
	})
	onInvoice := func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		_, err := grant.Do(ctx, tx, ev.Object.ID, ev.Object.Metadata["account_id"])
		return err
	}
	idempotency.On(hs, "invoice.paid", onInvoice)
	_ = hs.WriteOwnershipTable(os.Stdout)
	// Output:
	// ACTION      KEY         OWNERS
	// grant-plan  invoice id  invoice.paid, invoice.payment_succeeded (no handler)
}

// A deterministic idempotency key for a refund, the same in every process
// that retries it.
func ExampleKey() {
	fmt.Println(idempotency.Key("refund", "ord_1", "v1"))
	// Output:
	// ik_wR5qPnSDRnFv59rIfcqWsDEuyTc_2AUq-PkRi7jkTLk
}
