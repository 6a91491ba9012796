package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// Enqueue stores the task in the event's transaction: when the handler
// fails after it, the task rolls back with the handler's writes and is
// not sent; the retry that commits stores it, and a worker runs it after
// the commit (WorkDue here runs it in the same call as the event).
func ExampleTask_Enqueue() {
	ctx := context.Background()
	hs := idempotency.NewHandlers()
	receipt := idempotency.NewTask(hs, "send-receipt", func(ctx context.Context, run idempotency.TaskRun[string]) error {
		fmt.Println("receipt of", run.Key, "sent to", run.Args)
		return nil // the email provider's call, with run.IdempotencyKey
	})
	ledgerDown := true
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		if _, err := receipt.Enqueue(ctx, tx, ev.Object.ID, "billing@example.com"); err != nil {
			return err
		}
		if ledgerDown {
			return errors.New("ledger unavailable") // rolls the enqueue back too
		}
		return nil // the business writes, in tx
	})
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	inbox, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{
		Now:    clock.Now,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{"whsec_test"}})
	if err != nil {
		log.Fatal(err)
	}
	idempotencytest.Deliver(h, invoiceEvent("evt_1", "invoice.paid", nil), "whsec_test")

	_, _ = inbox.WorkDue(ctx) // attempt 1 fails
	_, stored, _ := inbox.Lookup(ctx, receipt.ID("in_1"))
	fmt.Println("task stored:", stored)

	ledgerDown = false
	rec, _, _ := inbox.Lookup(ctx, "evt_1")
	clock.Set(rec.NextAttemptAt)
	n, _ := inbox.WorkDue(ctx) // attempt 2 commits; the task runs after it
	task, _, _ := inbox.Lookup(ctx, receipt.ID("in_1"))
	fmt.Println(n, "attempts;", task.EventID, task.State)
	// Output:
	// task stored: false
	// receipt of in_1 sent to billing@example.com
	// 2 attempts; task:send-receipt:in_1 processed
}
