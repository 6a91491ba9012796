package idempotency_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// A handler that applies a subscription's payload checks its order first,
// as Stripe does not deliver in order: an event older than the newest one
// applied is skipped, and one of the same second is a tie, which no
// payload can settle: fetch the subscription then (or register the type
// with OnCurrent, which fetches for every event that no later fetch has
// covered).
func ExampleCheckOrder() {
	status := map[string]string{} // a fake of the subscriptions table
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "customer.subscription.updated", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Subscription]) error {
		order, err := idempotency.CheckOrder(ctx, tx, "subscription", ev.Object.ID, ev.Created)
		if err != nil {
			return err
		}
		fmt.Println(ev.ID, ev.Object.Status, order)
		switch order {
		case idempotency.OrderNewer:
			tx.AfterCommit(func(context.Context) { status[ev.Object.ID] = string(ev.Object.Status) })
		case idempotency.OrderTie:
			// Fetch the subscription and apply what the API returns.
		}
		return nil
	})
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{"whsec_test"},
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, e := range []struct {
		id, status string
		created    time.Time
	}{
		{"evt_2", "active", created.Add(time.Minute)}, // arrives first
		{"evt_1", "incomplete", created},
		{"evt_3", "past_due", created.Add(time.Minute)},
	} {
		idempotencytest.Deliver(h, subscriptionUpdated(e.id, e.status, e.created), "whsec_test")
	}
	fmt.Println("sub_1 is", status["sub_1"])
	// Output:
	// evt_2 active newer
	// evt_1 incomplete older
	// evt_3 past_due tie
	// sub_1 is active
}

// subscriptionUpdated returns a customer.subscription.updated event about
// subscription sub_1, created at created.
func subscriptionUpdated(id, status string, created time.Time) []byte {
	b, _ := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": "customer.subscription.updated", "created": created.Unix(), "api_version": stripe.APIVersion,
		"data": map[string]any{"object": map[string]any{"id": "sub_1", "object": "subscription", "status": status}},
	})
	return b
}
