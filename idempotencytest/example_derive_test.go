package idempotencytest_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// The events of a test made from one real event: a connected account's
// second refund of a charge is the fixture's charge.refunded with another
// event id, the account, a charge of 1000 of which 300 is refunded so far
// (amount_refunded, 100 before it) and the order in the empty metadata.
// A typo inside a path panics naming it and what is there, rather than
// add a field Stripe never sends.
func ExampleDerive() {
	refunded, err := os.ReadFile("../testdata/stripe-events/charge.refunded.json") // as Stripe sent it
	if err != nil {
		panic(err)
	}
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "charge.refunded", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Charge]) error {
		fmt.Println(ev.ID, ev.Account, ev.Object.AmountRefunded, ev.Object.Metadata["order_id"])
		return nil
	})
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{"whsec_test"},
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}

	second := idempotencytest.Derive(refunded, map[string]any{
		"id":                            "evt_refund_2",
		"account":                       "acct_1",
		"data.object.amount":            1000,
		"data.object.amount_refunded":   300,
		"data.object.metadata.order_id": "order_1",
		"data.previous_attributes":      map[string]any{"amount_refunded": 100},
	})
	fmt.Println(idempotencytest.Deliver(h, second, "whsec_test").Outcome)

	defer func() { fmt.Println(recover()) }()
	idempotencytest.Derive(refunded, map[string]any{"data.objet.amount_refunded": 300})
	// Output:
	// evt_refund_2 acct_1 300 order_1
	// processed
	// idempotencytest: Derive: "data.objet.amount_refunded": data has no key "objet" (its keys: "object", "previous_attributes"); a key is added only as a path's last segment
}
