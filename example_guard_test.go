package idempotency_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"

	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// invoice.paid and invoice.payment_succeeded are two events, two event ids,
// for one payment: each handler guards the invoice id in its transaction,
// and only the first to commit credits. The guard commits or rolls back
// with the handler's writes, so an event whose handler failed after its
// Guard leaves the key free for the next.
func ExampleTx_Guard() {
	credited := 0
	credit := func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID)
		if err != nil {
			return err
		}
		fmt.Println(ev.Type, "first:", first)
		if !first {
			return nil // another event credited the invoice: processed, nothing written
		}
		tx.AfterCommit(func(context.Context) { credited++ }) // a fake of the accounts table
		return nil
	}
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", credit)
	idempotency.On(hs, "invoice.payment_succeeded", credit)
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{"whsec_test"},
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	idempotencytest.Deliver(h, invoiceEvent("evt_1", "invoice.payment_succeeded", nil), "whsec_test")
	idempotencytest.Deliver(h, invoiceEvent("evt_2", "invoice.paid", nil), "whsec_test")
	fmt.Println("credited", credited, "time(s)")
	// Output:
	// invoice.payment_succeeded first: true
	// invoice.paid first: false
	// credited 1 time(s)
}
