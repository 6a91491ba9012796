package idempotencytest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// A handler tested on the memory store, with a fake of the accounts table
// whose writes apply when the event's transaction commits: one delivery is
// processed, 50 concurrent copies of another event for the same invoice run
// nothing more, and a forged signature is refused.
func Example() {
	var mu sync.Mutex
	credits := map[string]int{} // the fake accounts table
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID)
		if err != nil || !first {
			return err
		}
		account := ev.Object.Metadata["account_id"]
		tx.AfterCommit(func(context.Context) { // only if the claim commits
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
	event := func(id string) []byte {
		b, _ := json.Marshal(map[string]any{
			"id": id, "object": "event", "type": "invoice.paid", "api_version": stripe.APIVersion,
			"data": map[string]any{"object": map[string]any{
				"id": "in_1", "object": "invoice", "metadata": map[string]string{"account_id": "acct_1"},
			}},
		})
		return b
	}

	a := idempotencytest.Deliver(h, event("evt_1"), "whsec_test")
	fmt.Println(a.Status, a.Outcome, credits["acct_1"])

	answers := idempotencytest.Replay(h, event("evt_2"), "whsec_test", 50)
	fmt.Println(answers.Statuses(), answers.Count(idempotency.OutcomeProcessed), answers.Count(idempotency.OutcomeDuplicate), credits["acct_1"])

	a = idempotencytest.Deliver(h, event("evt_3"), "whsec_forged")
	fmt.Println(a.Status, a.Body)
	// Output:
	// 200 processed 100
	// map[200:50] 1 49 100
	// 400 {"error":"invalid_signature"}
}

// An idempotency.OnCurrent handler tested on the memory store with a
// Table as the fake of its table: each write applies when the event's
// transaction commits, and of two events of one subscription applied at
// once, the row of the later fetch is kept.
func ExampleTable() {
	var subs idempotencytest.Table[stripe.SubscriptionStatus] // the fake subscriptions table
	hs := idempotency.NewHandlers()
	idempotency.OnCurrent(hs, []string{"customer.subscription.updated"},
		func(ctx context.Context, id, account string) (*stripe.Subscription, error) {
			return &stripe.Subscription{ID: id, Status: stripe.SubscriptionStatusActive}, nil // the API's state
		},
		func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Subscription]) error {
			subs.Put(tx, ev.Object.ID, ev.Object.Status) // under the object's lock
			return nil
		})
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{"whsec_test"},
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	updated := func(id string) []byte {
		b, _ := json.Marshal(map[string]any{
			"id": id, "object": "event", "type": "customer.subscription.updated", "api_version": stripe.APIVersion,
			"data": map[string]any{"object": map[string]any{"id": "sub_1", "object": "subscription", "status": "incomplete"}},
		})
		return b
	}

	answers := idempotencytest.ReplayAll(h, [][]byte{updated("evt_1"), updated("evt_2")}, "whsec_test", 1)
	fmt.Println(answers.Count(idempotency.OutcomeProcessed))
	fmt.Println(subs.Get("sub_1"))
	// Output:
	// 2
	// active true
}

// Twin events, two event ids for one change (invoice.paid and
// invoice.payment_succeeded of one invoice), sent in 5 copies each, all at
// once: each event is processed once, and the guard on the invoice credits
// it once. The answers come in the payloads' order, 5 of each.
func ExampleReplayAll() {
	var mu sync.Mutex
	credits := map[string]int{} // the fake accounts table
	credit := func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID)
		if err != nil || !first {
			return err
		}
		account := ev.Object.Metadata["account_id"]
		tx.AfterCommit(func(context.Context) {
			mu.Lock()
			defer mu.Unlock()
			credits[account] += 100
		})
		return nil
	}
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", credit)
	idempotency.On(hs, "invoice.payment_succeeded", credit)
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{"whsec_test"},
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	event := func(id, typ string) []byte {
		b, _ := json.Marshal(map[string]any{
			"id": id, "object": "event", "type": typ, "api_version": stripe.APIVersion,
			"data": map[string]any{"object": map[string]any{
				"id": "in_1", "object": "invoice", "metadata": map[string]string{"account_id": "acct_1"},
			}},
		})
		return b
	}

	const n = 5
	answers := idempotencytest.ReplayAll(h, [][]byte{event("evt_1", "invoice.paid"), event("evt_2", "invoice.payment_succeeded")}, "whsec_test", n)
	for i := 0; i < len(answers); i += n {
		of := answers[i : i+n]
		fmt.Println(of[0].EventID, of.Count(idempotency.OutcomeProcessed), of.Count(idempotency.OutcomeDuplicate))
	}
	fmt.Println(credits["acct_1"])
	// Output:
	// evt_1 1 4
	// evt_2 1 4
	// 100
}

// Each Answer names the event its delivery sent, read from the payload
// and not from the answer, so that the answers of several events are told
// apart; a payload that is not an event names none.
func ExampleDeliver() {
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), idempotency.NewHandlers(), idempotency.Config{
		Secrets: []string{"whsec_test"},
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	created := func(id string) []byte {
		b, _ := json.Marshal(map[string]any{
			"id": id, "object": "event", "type": "customer.created", "api_version": stripe.APIVersion,
			"data": map[string]any{"object": map[string]any{"id": "cus_1", "object": "customer"}},
		})
		return b
	}

	for _, payload := range [][]byte{created("evt_1"), created("evt_2"), []byte(`{"id":"cus_1","object":"customer"}`)} {
		a := idempotencytest.Deliver(h, payload, "whsec_test")
		fmt.Printf("%q %d %s\n", a.EventID, a.Status, a.Body)
	}
	// Output:
	// "evt_1" 200 {"outcome":"ignored"}
	// "evt_2" 200 {"outcome":"ignored"}
	// "" 400 {"error":"invalid_event"}
}

// While an endpoint's secret rolls, Stripe signs each delivery with the old
// and the new secret, one v1 each. A service that lists only the new secret
// (or only the old one) still verifies it, and one that lists neither
// answers 400.
func ExampleSignatureHeaderSecrets() {
	const oldSecret, newSecret = "whsec_old", "whsec_new"
	payload, _ := json.Marshal(map[string]any{
		"id": "evt_1", "object": "event", "type": "customer.created", "api_version": stripe.APIVersion,
		"data": map[string]any{"object": map[string]any{"id": "cus_1", "object": "customer"}},
	})
	header := idempotencytest.SignatureHeaderSecrets(payload, time.Now(), oldSecret, newSecret)

	for _, secrets := range [][]string{{newSecret}, {oldSecret}, {"whsec_other"}} {
		h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), idempotency.NewHandlers(), idempotency.Config{
			Secrets: secrets,
			Logger:  slog.New(slog.DiscardHandler),
		})
		if err != nil {
			panic(err)
		}
		req := idempotencytest.NewSignedRequest("/", payload, newSecret)
		req.Header.Set("Stripe-Signature", header) // both v1s, the old one first
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(secrets, rec.Code, rec.Body.String())
	}
	// Output:
	// [whsec_new] 200 {"outcome":"ignored"}
	// [whsec_old] 200 {"outcome":"ignored"}
	// [whsec_other] 400 {"error":"invalid_signature"}
}

// A thin event tested without a network: V2Events keeps the event and
// answers the Handler's fetch of it, through a client of NewStripeClient;
// the notification Add returns, printed first, is what an event
// destination sends. Each delivery fetches the event.
func ExampleV2Events() {
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "v1.billing.meter.error_report_triggered",
		func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[stripe.V1BillingMeterErrorReportTriggeredEventData]) error {
			fmt.Println(ev.ObjectID, ev.Account, ev.Object.DeveloperMessageSummary)
			return nil
		})
	api := idempotencytest.NewV2Events()
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets:      []string{"whsec_test"},
		StripeClient: idempotencytest.NewStripeClient("sk_test_123", api),
		Logger:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}

	notification := api.Add(idempotencytest.ThinEvent{
		ID:            "evt_1",
		Type:          "v1.billing.meter.error_report_triggered",
		Context:       "acct_1", // a connected account's event, fetched as it
		Created:       time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC),
		RelatedObject: &stripe.RelatedObject{ID: "mtr_1", Type: "billing.meter", URL: "/v1/billing/meters/mtr_1"},
		Data:          stripe.V1BillingMeterErrorReportTriggeredEventData{DeveloperMessageSummary: "There is 1 invalid event"},
	})
	fmt.Println(string(notification))
	fmt.Println(idempotencytest.Deliver(h, notification, "whsec_test").Outcome)
	fmt.Println(idempotencytest.Deliver(h, notification, "whsec_test").Outcome, api.Fetches("evt_1"))
	// Output:
	// {"id":"evt_1","object":"v2.core.event","type":"v1.billing.meter.error_report_triggered","livemode":false,"created":"2026-03-01T08:00:00.000Z","context":"acct_1","related_object":{"id":"mtr_1","type":"billing.meter","url":"/v1/billing/meters/mtr_1"}}
	// mtr_1 acct_1 There is 1 invalid event
	// processed
	// duplicate 1
}

// An idempotency.OnCurrent handler tested with a FetchFunc of the test's
// own, over a map of the API's objects: no network and no fake server.
// The service registers the same handler with
// idempotency.Retrieve(client.V1Subscriptions.Retrieve). A fetch that
// returns idempotency.ErrObjectNotFound, as Retrieve does for a 404
// resource_missing, skips the event.
func Example_onCurrent() {
	subs := map[string]*stripe.Subscription{"sub_1": {ID: "sub_1", Status: stripe.SubscriptionStatusActive}}
	fetch := func(ctx context.Context, id, account string) (*stripe.Subscription, error) {
		if sub, ok := subs[id]; ok {
			return sub, nil
		}
		return nil, idempotency.ErrObjectNotFound
	}
	hs := idempotency.NewHandlers()
	idempotency.OnCurrent(hs, []string{"customer.subscription.updated"}, fetch,
		func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Subscription]) error {
			fmt.Println(ev.Object.ID, ev.Object.Status) // the state fetched, not the payload's
			return nil
		})
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{"whsec_test"},
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	updated := func(id, sub string) []byte {
		b, _ := json.Marshal(map[string]any{
			"id": id, "object": "event", "type": "customer.subscription.updated", "api_version": stripe.APIVersion,
			"data": map[string]any{"object": map[string]any{"id": sub, "object": "subscription", "status": "incomplete"}},
		})
		return b
	}

	fmt.Println(idempotencytest.Deliver(h, updated("evt_1", "sub_1"), "whsec_test").Outcome)
	fmt.Println(idempotencytest.Deliver(h, updated("evt_2", "sub_gone"), "whsec_test").Outcome)
	// Output:
	// sub_1 active
	// processed
	// skipped
}
