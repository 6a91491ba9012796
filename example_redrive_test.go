package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"

	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// An event whose every attempt failed is dead-lettered, and holds nothing
// back. Once the cause is fixed, Redrive moves it back to pending with a
// fresh attempt budget, counting the redrive in its record, and the
// workers apply it.
func ExampleInbox_Redrive() {
	ctx := context.Background()
	accountsMigrated := false
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		if !accountsMigrated {
			return errors.New("table accounts has no column plan")
		}
		return nil // the business writes, in tx
	})
	quiet := slog.New(slog.DiscardHandler)
	inbox, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{MaxAttempts: 1, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{"whsec_test"}, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	idempotencytest.Deliver(h, invoiceEvent("evt_1", "invoice.paid", nil), "whsec_test")
	show := func() {
		rec, _, _ := inbox.Lookup(ctx, "evt_1")
		fmt.Printf("%s after attempt %d, redriven %d time(s) %s\n", rec.State, rec.Attempt, rec.Redrives, rec.LastError)
	}
	_, _ = inbox.WorkDue(ctx) // Run, in production
	show()

	accountsMigrated = true
	n, err := inbox.Redrive(ctx, idempotency.RedriveFilter{EventType: "invoice.paid"}) // dead letters by default
	fmt.Println(n, "redriven", err)
	_, _ = inbox.WorkDue(ctx)
	show()
	// Output:
	// dead_letter after attempt 1, redriven 0 time(s) table accounts has no column plan
	// 1 redriven <nil>
	// processed after attempt 1, redriven 1 time(s)
}
