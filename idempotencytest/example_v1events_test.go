package idempotencytest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// A test of Recover, without a network: two events are delivered and one
// is missed (the endpoint was down), and V1Events lists all three, as the
// Events API would. Recover applies the missed one and finds the
// delivered ones duplicates. Run again, it continues its checkpoint and
// applies nothing: it lists from RecoveryOverlap (10 minutes) before the
// checkpoint's last event, for events the Events API lists late, and the
// two it finds are duplicates.
func ExampleV1Events() {
	var mu sync.Mutex
	credits := map[string]int{} // the fake accounts table
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		account := ev.Object.Metadata["account_id"]
		tx.AfterCommit(func(context.Context) {
			mu.Lock()
			defer mu.Unlock()
			credits[account] += 100
		})
		return nil
	})
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{"whsec_test"},
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	now := time.Now()
	event := func(id string, created time.Time) []byte { // created: the Events API lists by it
		b, _ := json.Marshal(map[string]any{
			"id": id, "object": "event", "type": "invoice.paid", "api_version": stripe.APIVersion, "created": created.Unix(),
			"data": map[string]any{"object": map[string]any{
				"id": "in_" + id, "object": "invoice", "metadata": map[string]string{"account_id": "acct_1"},
			}},
		})
		return b
	}

	api := idempotencytest.NewV1Events()
	idempotencytest.Deliver(h, api.Add(event("evt_1", now.Add(-time.Hour))), "whsec_test")
	idempotencytest.Deliver(h, api.Add(event("evt_2", now.Add(-50*time.Minute))), "whsec_test")
	api.AddUndelivered(event("evt_3", now.Add(-40*time.Minute))) // the endpoint was down: never delivered
	fmt.Println(credits["acct_1"])

	client := idempotencytest.NewStripeClient("sk_test_123", api)
	opts := idempotency.RecoverOptions{Since: now.Add(-2 * time.Hour), Checkpoint: "outage"}
	rep, err := h.Recover(context.Background(), client, opts)
	fmt.Println(rep.Listed, rep.Processed, rep.Duplicate, err, credits["acct_1"])

	rep, err = h.Recover(context.Background(), client, opts)
	fmt.Println(rep.Listed, rep.Processed, rep.Duplicate, rep.Resumed, err, credits["acct_1"])
	// Output:
	// 200
	// 3 1 2 <nil> 300
	// 2 0 2 true <nil> 300
}
