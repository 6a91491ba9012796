package idempotencytest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// Drain takes an inbox through every retry in one call: an event whose
// handler always fails makes its 20 attempts, over a week of the default
// backoff on the fake clock, and is dead-lettered; once the cause is
// fixed, a redrive and another Drain apply it.
func ExampleDrain() {
	ctx := context.Background()
	paid, err := os.ReadFile("../testdata/stripe-events/invoice.paid.json") // as Stripe sent it
	if err != nil {
		panic(err)
	}
	fixed := false
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		if !fixed {
			return errors.New("invoice without a customer: a bug of ours")
		}
		return nil // the business writes, in tx
	})
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	inbox, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{
		Now:    clock.Now,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{"whsec_test"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(idempotencytest.Deliver(h, paid, "whsec_test").Outcome)

	id := "evt_1S2kq5B7WZ01zgkWbX2cNw7Y"
	n, err := idempotencytest.Drain(ctx, inbox, clock, 8*24*time.Hour)
	rec, _, _ := inbox.Lookup(ctx, id)
	fmt.Println(n, "attempts,", rec.State, err)
	fmt.Println("days on the fake clock, more than 5:", clock.Now().Sub(rec.ReceivedAt) > 5*24*time.Hour) // 6.5 ±10%

	fixed = true // the release with the fix
	moved, _ := inbox.Redrive(ctx, idempotency.RedriveFilter{EventIDs: []string{id}})
	n, err = idempotencytest.Drain(ctx, inbox, clock, time.Hour)
	rec, _, _ = inbox.Lookup(ctx, id)
	fmt.Println(moved, "redriven,", n, "attempt,", rec.State, err)
	// Output:
	// queued
	// 20 attempts, dead_letter <nil>
	// days on the fake clock, more than 5: true
	// 1 redriven, 1 attempt, processed <nil>
}
