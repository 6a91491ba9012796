package idempotency_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// PruneEvery, started beside the workers on every replica, prunes at once
// and then every interval until its context is done: here an event the
// inbox finished eight days ago loses its row and payload (Payloads keeps
// them seven days by default), while its claim, which answers a
// redelivery duplicate, stays for 45 days.
func ExamplePruneEvery() {
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		return nil
	})
	quiet := slog.New(slog.DiscardHandler)
	store := idempotency.NewMemoryStore() // a PgxStore in production
	clock := idempotencytest.NewClock(time.Now().Add(-8 * 24 * time.Hour))
	inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: clock.Now, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{"whsec_test"}})
	if err != nil {
		log.Fatal(err)
	}
	idempotencytest.Deliver(h, invoiceEvent("evt_1", "invoice.paid", nil), "whsec_test")
	_, _ = inbox.WorkDue(context.Background())

	ctx, stop := context.WithCancel(context.Background())
	r := idempotency.Retention{OnBatch: func(so idempotency.PruneReport) {
		fmt.Println("inbox events:", so.Events, "claims:", so.EventIDs)
		stop() // a service stops it on SIGTERM
	}}
	fmt.Println(idempotency.PruneEvery(ctx, store, r, time.Hour, quiet))
	_, stored, _ := inbox.Lookup(context.Background(), "evt_1")
	claim, claimed, _ := store.LookupEvent(context.Background(), "evt_1")
	fmt.Println("in the inbox:", stored, "claimed:", claimed, claim.Outcome)
	// Output:
	// inbox events: 1 claims: 0
	// context canceled
	// in the inbox: false claimed: true processed
}
