package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// A service in inbox mode on PostgreSQL: the inbox's Handler on the
// webhook route stores each verified event and answers at once, Run's
// workers apply the events (and run the tasks) beside it, and PruneEvery
// deletes what the store no longer needs. On SIGINT or SIGTERM the server
// stops taking deliveries and Run lets the attempts in flight finish.
// (Compiled, not run: it needs a database.)
func ExampleNewInbox() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	const workers = 8
	cfg, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	cfg.MaxConns = workers + 1 + 4 // one per worker, Run's LISTEN, and room for the Handler's inserts and the prune
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	store, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{})
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}

	hs := idempotency.NewHandlers() // On, OnCurrent, NewAction and NewTask here, before NewInbox
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		return nil // the business writes, through idempotency.PgxTx(tx)
	})
	inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Workers: workers})
	if err != nil {
		log.Fatal(err)
	}
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{os.Getenv("STRIPE_WEBHOOK_SECRET")}})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /webhooks/stripe", h)
	srv := &http.Server{Addr: ":8080", Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second}

	go func() { _ = idempotency.PruneEvery(ctx, store, idempotency.Retention{}, time.Hour, nil) }()
	workersDone := make(chan error, 1)
	go func() { workersDone <- inbox.Run(ctx) }()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	if err := <-workersDone; err != nil { // ErrShutdownTimeout: attempts cut, to be retried
		log.Print(err)
	}
}

// Run's workers apply what the inbox's Handler stored, until Run's
// context is done: Run then lets the attempts in flight end and returns
// nil (an error wrapping ErrShutdownTimeout when it had to cut some).
func ExampleInbox_Run() {
	applied := make(chan string, 1)
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		tx.AfterCommit(func(context.Context) { applied <- ev.ID })
		return nil // the business writes, in tx
	})
	inbox, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{"whsec_test"}}) // logs to InboxConfig.Logger
	if err != nil {
		log.Fatal(err)
	}

	ctx, stop := context.WithCancel(context.Background()) // signal.NotifyContext, in a service
	runDone := make(chan error, 1)
	go func() { runDone <- inbox.Run(ctx) }()

	fmt.Println(idempotencytest.Deliver(h, invoiceEvent("evt_1", "invoice.paid", nil), "whsec_test").Outcome)
	fmt.Println("applied", <-applied)
	stop()
	fmt.Println("Run returned", <-runDone)
	// Output:
	// queued
	// applied evt_1
	// Run returned <nil>
}

// The inbox's Handler answers Stripe once the event is stored, before any
// handler runs: queued, then duplicate for a copy of it, whatever its
// state; an event type without a handler is ignored and stores nothing.
func ExampleInbox_Handler() {
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		return nil
	})
	inbox, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{"whsec_test"}})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /webhooks/stripe", h)
	for _, payload := range [][]byte{
		invoiceEvent("evt_1", "invoice.paid", nil),
		invoiceEvent("evt_1", "invoice.paid", nil),
		invoiceEvent("evt_2", "invoice.created", nil),
	} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, idempotencytest.NewSignedRequest("/webhooks/stripe", payload, "whsec_test"))
		fmt.Println(rec.Code, rec.Body)
	}
	st, _ := inbox.Stats(context.Background())
	fmt.Println("pending:", st.Counts[idempotency.InboxPending])
	// Output:
	// 200 {"outcome":"queued"}
	// 200 {"outcome":"duplicate"}
	// 200 {"outcome":"ignored"}
	// pending: 1
}
