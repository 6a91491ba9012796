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

// A receipt sent once per invoice, after the event's transaction commits:
// invoice.paid and invoice.payment_succeeded both enqueue it, the second
// enqueue changes nothing, and an inbox's worker runs it once, with the
// idempotency key it would pass to the email provider on every attempt.
// The Handler here is synchronous; the inbox only runs the tasks.
func ExampleNewTask() {
	ctx := context.Background()
	hs := idempotency.NewHandlers()
	type receipt struct {
		Account string `json:"account"`
	}
	sendReceipt := idempotency.NewTask(hs, "send-receipt", func(ctx context.Context, run idempotency.TaskRun[receipt]) error {
		fmt.Println("receipt of", run.Key, "to", run.Args.Account, "with key", run.IdempotencyKey)
		return nil // the provider's call, with run.IdempotencyKey
	})
	enqueue := func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		enqueued, err := sendReceipt.Enqueue(ctx, tx, ev.Object.ID, receipt{Account: ev.Object.Metadata["account_id"]})
		fmt.Println(ev.Type, "enqueued:", enqueued)
		return err
	}
	idempotency.On(hs, "invoice.paid", enqueue)
	idempotency.On(hs, "invoice.payment_succeeded", enqueue)

	store := idempotency.NewMemoryStore()
	quiet := slog.New(slog.DiscardHandler)
	inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: quiet}) // after NewTask: it takes a snapshot
	if err != nil {
		log.Fatal(err)
	}
	h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{"whsec_test"}, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	account := map[string]string{"account_id": "acct_1"}
	idempotencytest.Deliver(h, invoiceEvent("evt_1", "invoice.paid", account), "whsec_test")
	idempotencytest.Deliver(h, invoiceEvent("evt_2", "invoice.payment_succeeded", account), "whsec_test")

	n, err := inbox.WorkDue(ctx) // Run, in production
	if err != nil {
		log.Fatal(err)
	}
	rec, _, _ := inbox.Lookup(ctx, sendReceipt.ID("in_1"))
	fmt.Println(n, "attempt:", rec.EventID, rec.State)
	// Output:
	// invoice.paid enqueued: true
	// invoice.payment_succeeded enqueued: false
	// receipt of in_1 to acct_1 with key send-receipt-fecb372f8843489f63fb5ef7e9e191a18900dcdd5028fffcb82af7d392470223
	// 1 attempt: task:send-receipt:in_1 processed
}
