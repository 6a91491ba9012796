package idempotencytest_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// An OnCurrent handler whose fetch is the service's own,
// idempotency.Retrieve on a stripe-go client, tested against a fake of
// the one API route it calls, served in the process: the handler gets the
// subscription as the API returns it (past_due), not as the event's
// payload shows it (active), and an unknown one is answered as Stripe
// does (WriteStripeError), which skips its event.
func ExampleNewStripeClient() {
	updated, err := os.ReadFile("../testdata/stripe-events/customer.subscription.updated.json") // as Stripe sent it
	if err != nil {
		panic(err)
	}
	api := http.NewServeMux()
	api.HandleFunc("GET /v1/subscriptions/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "sub_1Pgc6rB7WZ01zgkWNy0Cn5nw" {
			idempotencytest.WriteStripeError(w, http.StatusNotFound, "resource_missing", "No such subscription")
			return
		}
		fmt.Fprint(w, `{"id":"sub_1Pgc6rB7WZ01zgkWNy0Cn5nw","object":"subscription","status":"past_due"}`)
	})
	client := idempotencytest.NewStripeClient("sk_test_123", api)

	hs := idempotency.NewHandlers()
	idempotency.OnCurrent(hs, []string{"customer.subscription.updated"}, idempotency.Retrieve(client.V1Subscriptions.Retrieve),
		func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Subscription]) error {
			fmt.Println(ev.Object.ID, ev.Object.Status)
			return nil // the business writes, in tx
		})
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{"whsec_test"},
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(idempotencytest.Deliver(h, updated, "whsec_test").Outcome)
	gone := idempotencytest.Derive(updated, map[string]any{"id": "evt_2", "data.object.id": "sub_gone"})
	fmt.Println(idempotencytest.Deliver(h, gone, "whsec_test").Outcome)
	// Output:
	// sub_1Pgc6rB7WZ01zgkWNy0Cn5nw past_due
	// processed
	// skipped
}
