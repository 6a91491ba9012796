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

// An inbox driven by a test, with no worker and no sleep: Deliver stores
// the event, Inbox.WorkDue makes the attempts due at the clock, and
// Clock.Set moves the clock to the failed event's NextAttemptAt, the
// default backoff's wait with its ±10% in it, for the retry.
func ExampleClock() {
	ctx := context.Background()
	paid, err := os.ReadFile("../testdata/stripe-events/invoice.paid.json") // as Stripe sent it
	if err != nil {
		panic(err)
	}
	accountingUp := false
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		if !accountingUp {
			return errors.New("accounting API unavailable")
		}
		return nil // the business writes, in tx
	})
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	inbox, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{
		Now:    clock.Now, // the Handler's stored events and the workers' due times
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
	show := func() {
		rec, _, _ := inbox.Lookup(ctx, id)
		fmt.Println(rec.State, "after attempt", rec.Attempt)
	}
	_, _ = inbox.WorkDue(ctx)
	show()
	accountingUp = true
	n, _ := inbox.WorkDue(ctx) // not due yet: the clock stands still
	fmt.Println(n, "attempts")
	rec, _, _ := inbox.Lookup(ctx, id)
	clock.Set(rec.NextAttemptAt)
	_, _ = inbox.WorkDue(ctx)
	show()
	// Output:
	// queued
	// failed after attempt 1
	// 0 attempts
	// processed after attempt 2
}
