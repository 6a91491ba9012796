package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// A handler for invoice.paid that credits an account once per invoice,
// tested on the memory store: the first delivery is processed, the same
// delivery again is a duplicate, and a second event about the same invoice
// is processed without a second credit.
func ExampleOn() {
	credits := map[string]int{}
	hs := idempotency.NewHandlers()
	credit := func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID)
		if err != nil || !first {
			return err
		}
		account := ev.Object.Metadata["account_id"]
		tx.AfterCommit(func(context.Context) { credits[account] += 100 }) // a fake of the accounts table
		return nil
	}
	idempotency.On(hs, "invoice.paid", credit)
	idempotency.On(hs, "invoice.payment_succeeded", credit)

	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{"whsec_test"},
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	account := map[string]string{"account_id": "acct_1"}
	for _, payload := range [][]byte{
		invoiceEvent("evt_1", "invoice.paid", account),
		invoiceEvent("evt_1", "invoice.paid", account),
		invoiceEvent("evt_2", "invoice.payment_succeeded", account),
	} {
		a := idempotencytest.Deliver(h, payload, "whsec_test")
		fmt.Println(a.Status, a.Outcome, credits["acct_1"])
	}
	// Output:
	// 200 processed 100
	// 200 duplicate 100
	// 200 processed 100
}

// An action declared once and owned by the two invoice events; the
// ownership table lists it.
func ExampleNewAction() {
	hs := idempotency.NewHandlers()
	grant := idempotency.NewAction(hs, idempotency.ActionSpec{
		Name:          "grant-plan",
		Key:           "invoice id",
		Owners:        []string{"invoice.paid", "invoice.payment_succeeded"},
		KeyIsObjectID: true, // the owners pass their invoice's id: claimed with the event
	}, func(ctx context.Context, tx idempotency.Tx, invoiceID string, account string) error {
		_, err := idempotency.PgxTx(tx).Exec(ctx, `UPDATE accounts SET plan = 'pro' WHERE id = $1`, account)
		return err
	})
	onInvoice := func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		_, err := grant.Do(ctx, tx, ev.Object.ID, ev.Object.Metadata["account_id"])
		return err
	}
	idempotency.On(hs, "invoice.paid", onInvoice)
	_ = hs.WriteOwnershipTable(os.Stdout)
	// Output:
	// ACTION      KEY         OWNERS
	// grant-plan  invoice id  invoice.paid, invoice.payment_succeeded (no handler)
}

// A deterministic idempotency key for a refund, the same in every process
// that retries it.
func ExampleKey() {
	fmt.Println(idempotency.Key("refund", "ord_1", "v1"))
	// Output:
	// ik_wR5qPnSDRnFv59rIfcqWsDEuyTc_2AUq-PkRi7jkTLk
}

// invoiceEvent returns a minimal invoice event as Stripe would send it,
// about invoice in_1 with the given metadata.
func invoiceEvent(id, typ string, metadata map[string]string) []byte {
	b, _ := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": typ, "created": 1756742403, "api_version": stripe.APIVersion,
		"data": map[string]any{"object": map[string]any{"id": "in_1", "object": "invoice", "metadata": metadata}},
	})
	return b
}

// The webhook handler mounted on a route. A misconfiguration fails here,
// at start-up, never at request time: an API key is no signing secret.
func ExampleNewHandler() {
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		return nil // the business writes, in tx
	})
	store := idempotency.NewMemoryStore() // idempotency.NewPgxStore in production

	_, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{"sk_test_123"}})
	fmt.Println(err != nil)

	h, err := idempotency.NewHandler(store, hs, idempotency.Config{
		Secrets: []string{"whsec_test"},
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /webhooks/stripe", h)

	for range 2 {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, idempotencytest.NewSignedRequest("/webhooks/stripe", invoiceEvent("evt_1", "invoice.paid", nil), "whsec_test"))
		fmt.Println(rec.Code, rec.Body)
	}
	// Output:
	// true
	// 200 {"outcome":"processed"}
	// 200 {"outcome":"duplicate"}
}

// An event that can never be processed, here an invoice without the
// account the service needs, is skipped: answered 200 so that Stripe stops
// sending it, its claim kept with the reason, the handler's writes rolled
// back. A redelivery is a duplicate.
func ExampleSkip() {
	store := idempotency.NewMemoryStore()
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		account := ev.Object.Metadata["account_id"]
		if account == "" {
			return idempotency.Skip("invoice without metadata.account_id")
		}
		return nil // credit the account
	})
	h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{"whsec_test"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	payload := invoiceEvent("evt_no_account", "invoice.paid", map[string]string{})
	fmt.Println(idempotencytest.Deliver(h, payload, "whsec_test").Outcome)
	fmt.Println(idempotencytest.Deliver(h, payload, "whsec_test").Outcome)
	rec, _, _ := store.LookupEvent(context.Background(), "evt_no_account")
	fmt.Println(rec.Outcome, rec.SkipReason)
	// Output:
	// skipped
	// duplicate
	// skipped invoice without metadata.account_id
}

// The PostgreSQL store on a pool: the store's tables (the ledger, the
// guards, the inbox and the rest) are migrated at start (safe on every
// replica), and the handler's SQL goes through PgxTx, in the transaction
// that claims the event. (Compiled, not run: it needs a database.)
func ExampleNewPgxStore() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	store, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: "stripe_webhooks"})
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID)
		if err != nil || !first {
			return err
		}
		tag, err := idempotency.PgxTx(tx).Exec(ctx, `UPDATE accounts SET credits = credits + 100 WHERE id = $1`,
			ev.Object.Metadata["account_id"])
		if err == nil && tag.RowsAffected() == 0 { // not created yet: Stripe does not deliver in order
			err = errors.New("metadata.account_id is no account") // rolled back, for Stripe to send it again
		}
		return err
	})
	h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{os.Getenv("STRIPE_WEBHOOK_SECRET")}})
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("POST /webhooks/stripe", h)
}

// An inbox driven by a fake clock, as a test of your handlers drives it:
// the delivery is answered queued, the first attempt fails, the retry
// comes due once the clock passes the backoff, and the event is applied
// once.
func ExampleInbox_WorkDue() {
	ctx := context.Background()
	downstreamUp := false
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		if !downstreamUp {
			return errors.New("accounting API unavailable")
		}
		return nil // the business writes, in tx
	})
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	inbox, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{
		Now:     clock.Now,
		Backoff: func(attempt int) time.Duration { return time.Duration(attempt) * time.Minute },
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{"whsec_test"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(idempotencytest.Deliver(h, invoiceEvent("evt_1", "invoice.paid", nil), "whsec_test").Outcome)

	work := func() {
		n, _ := inbox.WorkDue(ctx)
		recs, _ := inbox.List(ctx, idempotency.InboxFilter{})
		fmt.Printf("%d attempt(s) made; %s after attempt %d %s\n", n, recs[0].State, recs[0].Attempt, recs[0].LastError)
	}
	work()
	clock.Advance(30 * time.Second) // the retry is due one minute after attempt 1
	work()
	downstreamUp = true
	clock.Advance(30 * time.Second)
	work()
	// Output:
	// queued
	// 1 attempt(s) made; failed after attempt 1 accounting API unavailable
	// 0 attempt(s) made; failed after attempt 1 accounting API unavailable
	// 1 attempt(s) made; processed after attempt 2
}
