// Command demo shows, on the in-memory store and without any setup, what the
// library does with the deliveries Stripe makes: a handler that fails
// halfway, the retry, a burst of concurrent copies, a second event about an
// invoice already paid, and a forged signature. Then the same handlers in
// inbox mode: an event answered at once and applied by a worker, a
// downstream that fails three times and is retried with backoff, and a
// poison event dead-lettered, then redriven after the fix. Then a task: a
// receipt email enqueued in the event's transaction and sent by a worker,
// once, although the first attempt's answer is lost after the provider
// accepted the email. Last, current state against a fake Stripe API in the
// process: a subscription's events delivered in reverse order leave the
// API's state (OnCurrent), with the fetches counted in both modes, and a
// customer applied from its payloads is kept in order by CheckOrder.
//
//	go run ./examples/demo
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

const secret = "whsec_demo_secret"

// accounts is the service's business data. Writes made in a transaction are
// applied when it commits (AfterCommit), as a database would.
type accounts struct {
	mu      sync.Mutex
	credits map[string]int64
}

func (a *accounts) credit(tx idempotency.Tx, account string, amount int64) {
	tx.AfterCommit(func(context.Context) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.credits[account] += amount
	})
}

func (a *accounts) get(account string) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.credits[account]
}

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	accts := &accounts{credits: map[string]int64{}}
	var failNext atomic.Bool

	hs := idempotency.NewHandlers()
	creditInvoice := func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		account := ev.Object.Metadata["account_id"]
		if account == "" {
			return idempotency.Skip("no account_id in invoice metadata")
		}
		first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID)
		if err != nil || !first {
			return err
		}
		accts.credit(tx, account, 100)
		if failNext.CompareAndSwap(true, false) {
			return errors.New("receipt service unavailable") // after the first write
		}
		return nil
	}
	idempotency.On(hs, "invoice.paid", creditInvoice)
	idempotency.On(hs, "invoice.payment_succeeded", creditInvoice)

	store := idempotency.NewMemoryStore()
	h, err := idempotency.NewHandler(store, hs, idempotency.Config{
		Secrets: []string{secret},
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}

	evtA, err := invoiceEvent("evt_demo_A", "invoice.paid", "in_demo_1", "acct_demo")
	if err != nil {
		return err
	}
	evtB, err := invoiceEvent("evt_demo_B", "invoice.paid", "in_demo_2", "acct_demo")
	if err != nil {
		return err
	}
	evtC, err := invoiceEvent("evt_demo_C", "invoice.payment_succeeded", "in_demo_2", "acct_demo")
	if err != nil {
		return err
	}
	inLedger := func(id string) bool {
		_, ok, _ := store.LookupEvent(context.Background(), id)
		return ok
	}
	show := func(a idempotencytest.Answer) {
		fmt.Fprintf(w, "   -> %d %s   credits: %d\n", a.Status, a.Body, accts.get("acct_demo"))
	}

	fmt.Fprintln(w, "1. invoice.paid evt_demo_A; the handler credits 100, then fails")
	failNext.Store(true)
	show(idempotencytest.Deliver(h, evtA, secret))
	fmt.Fprintf(w, "   the credit rolled back with the claim; evt_demo_A in the ledger: %t\n", inLedger("evt_demo_A"))

	fmt.Fprintln(w, "2. Stripe retries evt_demo_A")
	show(idempotencytest.Deliver(h, evtA, secret))

	fmt.Fprintln(w, "3. 10 concurrent copies of evt_demo_B (a new invoice)")
	answers := idempotencytest.Replay(h, evtB, secret, 10)
	fmt.Fprintf(w, "   -> processed %d, duplicate %d   credits: %d\n",
		answers.Count(idempotency.OutcomeProcessed), answers.Count(idempotency.OutcomeDuplicate), accts.get("acct_demo"))

	fmt.Fprintln(w, "4. invoice.payment_succeeded evt_demo_C: another event id for the invoice of evt_demo_B")
	show(idempotencytest.Deliver(h, evtC, secret))
	fmt.Fprintln(w, "   the invoice guard held: no second credit")

	fmt.Fprintln(w, "5. evt_demo_A signed with the wrong secret")
	show(idempotencytest.Deliver(h, evtA, "whsec_forged"))
	if err := runInbox(w); err != nil {
		return err
	}
	if err := runTask(w); err != nil {
		return err
	}
	return runCurrent(w)
}

// runInbox shows inbox mode: the delivery is stored and answered at once,
// and a worker applies it, retrying failures with backoff (shortened here
// so that the demo takes a moment, not days).
func runInbox(w io.Writer) error {
	const maxAttempts = 4
	accts := &accounts{credits: map[string]int64{}}
	var downstreamFailures atomic.Int32 // the accounting API fails this many more calls
	var poisonFixed atomic.Bool

	hs := idempotency.NewHandlers()
	creditInvoice := func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		if ev.Object.ID == "in_demo_poison" && !poisonFixed.Load() {
			return errors.New("invoice line without a price: a bug in the handler")
		}
		if downstreamFailures.Add(-1) >= 0 {
			return errors.New("accounting API unavailable")
		}
		accts.credit(tx, ev.Object.Metadata["account_id"], 100)
		return nil
	}
	idempotency.On(hs, "invoice.paid", creditInvoice)

	results := make(chan idempotency.Result, 16)
	inbox, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{
		Workers:     2,
		MaxAttempts: maxAttempts,
		Backoff:     func(attempt int) time.Duration { return time.Duration(attempt) * 20 * time.Millisecond },
		Logger:      slog.New(slog.DiscardHandler),
		OnResult:    func(r idempotency.Result) { results <- r },
	})
	if err != nil {
		return err
	}
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{secret}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	workersDone := make(chan struct{})
	go func() {
		defer close(workersDone)
		_ = inbox.Run(ctx)
	}()
	defer func() {
		stop()
		<-workersDone
	}()
	// attempts prints the workers' attempts at evt until one ends it, or
	// fails after 30 s without that end rather than wait forever.
	attempts := func(evt string) error {
		timeout := time.After(30 * time.Second)
		for {
			select {
			case r := <-results:
				if r.EventID != evt {
					continue
				}
				printAttempt(w, r, fmt.Sprintf("   credits: %d", accts.get("acct_inbox")))
				if r.Outcome == idempotency.OutcomeProcessed || r.Attempt == maxAttempts {
					return nil
				}
			case <-timeout:
				return fmt.Errorf("the attempts at %s did not end within 30 s", evt)
			}
		}
	}

	fmt.Fprintln(w, "Inbox mode: the webhook stores the event and answers; workers apply it")
	fmt.Fprintf(w, "   (here at most %d attempts, milliseconds apart; by default %d, over 6.5 days)\n", maxAttempts, idempotency.DefaultMaxAttempts)
	evtD, err := invoiceEvent("evt_demo_D", "invoice.paid", "in_demo_4", "acct_inbox")
	if err != nil {
		return err
	}
	downstreamFailures.Store(3)
	fmt.Fprintln(w, "6. invoice.paid evt_demo_D while the accounting API fails three times")
	a := idempotencytest.Deliver(h, evtD, secret)
	fmt.Fprintf(w, "   -> %d %s   (stored; a worker applies it)\n", a.Status, a.Body)
	if err := attempts("evt_demo_D"); err != nil {
		return err
	}

	evtE, err := invoiceEvent("evt_demo_E", "invoice.paid", "in_demo_poison", "acct_inbox")
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "7. invoice.paid evt_demo_E, which the handler cannot process (a bug)")
	a = idempotencytest.Deliver(h, evtE, secret)
	fmt.Fprintf(w, "   -> %d %s\n", a.Status, a.Body)
	if err := attempts("evt_demo_E"); err != nil {
		return err
	}
	dead, err := inbox.List(ctx, idempotency.InboxFilter{States: []idempotency.InboxState{idempotency.InboxDeadLetter}})
	if err != nil {
		return err
	}
	for _, r := range dead {
		fmt.Fprintf(w, "   dead letter: %s after %d attempts (%s)\n", r.EventID, r.Attempt, r.LastError)
	}

	fmt.Fprintln(w, "8. the bug is fixed; the dead letter is redriven")
	poisonFixed.Store(true)
	n, err := inbox.Redrive(ctx, idempotency.RedriveFilter{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   redriven: %d (pending again, with a fresh attempt budget)\n", n)
	return attempts("evt_demo_E")
}

// printAttempt prints one attempt of an inbox worker, then more.
func printAttempt(w io.Writer, r idempotency.Result, more string) {
	detail := ""
	if r.Err != nil {
		detail = ": " + r.Err.Error()
	}
	fmt.Fprintf(w, "   worker, attempt %d: %s%s%s\n", r.Attempt, r.Outcome, detail, more)
}

// invoiceEvent returns a compact but real-shaped Stripe event for a paid
// invoice of account. Tests use complete fixtures; the demo needs only the
// fields its handler reads.
func invoiceEvent(id, typ, invoice, account string) ([]byte, error) {
	return json.MarshalIndent(map[string]any{
		"id":          id,
		"object":      "event",
		"api_version": stripe.APIVersion,
		"created":     1756742403,
		"livemode":    false,
		"type":        typ,
		"data": map[string]any{"object": map[string]any{
			"id": invoice, "object": "invoice", "status": "paid", "currency": "usd",
			"amount_due": 2000, "amount_paid": 2000, "customer": "cus_demo",
			"metadata": map[string]string{"account_id": account},
			"lines": map[string]any{"object": "list", "data": []any{map[string]any{
				"id": "il_" + strings.TrimPrefix(invoice, "in_"), "object": "line_item", "amount": 2000,
				"period": map[string]int64{"start": 1756742400, "end": 1759334400},
			}}},
		}},
	}, "", "  ")
}

// mailProvider is a fake email API that honours idempotency keys, as
// Stripe's API and most email APIs do: a request with a key it has seen is
// answered as the first one was, and sends nothing.
type mailProvider struct {
	mu             sync.Mutex
	requests       []string          // the idempotency key of every request
	sent           map[string]string // the emails sent, by idempotency key
	loseNextAnswer bool              // the next answer is lost on its way back
}

func (p *mailProvider) send(key, to, subject string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = append(p.requests, key)
	if _, ok := p.sent[key]; !ok {
		p.sent[key] = to + ": " + subject
	}
	if p.loseNextAnswer {
		p.loseNextAnswer = false
		return errors.New("mail provider: connection reset before the answer")
	}
	return nil
}

// receiptArgs are the arguments of the send-receipt task.
type receiptArgs struct {
	Account string `json:"account"`
}

// runTask shows a task next to the synchronous handler: the receipt of an
// invoice is enqueued in the event's transaction, once per invoice, and an
// inbox worker sends it after the commit with the same idempotency key on
// every attempt. A fake clock and WorkDue run the worker on this goroutine,
// so the output is always the same.
func runTask(w io.Writer) error {
	ctx := context.Background()
	clock := idempotencytest.NewClock(time.Date(2025, 9, 1, 16, 0, 0, 0, time.UTC))
	provider := &mailProvider{sent: map[string]string{}}
	accts := &accounts{credits: map[string]int64{}}

	hs := idempotency.NewHandlers()
	receipt := idempotency.NewTask(hs, "send-receipt", func(ctx context.Context, run idempotency.TaskRun[receiptArgs]) error {
		return provider.send(run.IdempotencyKey, run.Args.Account, "receipt for invoice "+run.Key)
	})
	var enqueued bool
	creditInvoice := func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		account := ev.Object.Metadata["account_id"]
		first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID)
		if err != nil {
			return err
		}
		if first {
			accts.credit(tx, account, 100)
		}
		// Once per invoice by itself: no guard needed in front of it.
		enqueued, err = receipt.Enqueue(ctx, tx, ev.Object.ID, receiptArgs{Account: account})
		return err
	}
	idempotency.On(hs, "invoice.paid", creditInvoice)
	idempotency.On(hs, "invoice.payment_succeeded", creditInvoice)

	// The synchronous Handler and an Inbox whose workers run the tasks, on
	// one store and one clock.
	discard := slog.New(slog.DiscardHandler)
	store := idempotency.NewMemoryStore()
	var results []idempotency.Result
	inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
		Now:      clock.Now,
		Backoff:  func(int) time.Duration { return time.Second },
		Logger:   discard,
		OnResult: func(r idempotency.Result) { results = append(results, r) },
	})
	if err != nil {
		return err
	}
	h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{secret}, Logger: discard, Now: clock.Now})
	if err != nil {
		return err
	}
	work := func() error {
		results = results[:0]
		if _, err := inbox.WorkDue(ctx); err != nil {
			return err
		}
		for _, r := range results {
			printAttempt(w, r, "")
		}
		return nil
	}

	fmt.Fprintln(w, "Tasks: a side effect that must happen once, sent by the inbox's workers after the commit")
	evtF, err := invoiceEvent("evt_demo_F", "invoice.paid", "in_demo_6", "acct_task")
	if err != nil {
		return err
	}
	evtG, err := invoiceEvent("evt_demo_G", "invoice.payment_succeeded", "in_demo_6", "acct_task")
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "9. invoice.paid evt_demo_F; the handler credits 100 and enqueues the receipt of in_demo_6")
	a := idempotencytest.Deliver(h, evtF, secret)
	fmt.Fprintf(w, "   -> %d %s   credits: %d   enqueued: %t\n", a.Status, a.Body, accts.get("acct_task"), enqueued)
	rec, _, err := inbox.Lookup(ctx, receipt.ID("in_demo_6"))
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   committed with the credit: %s is %s\n", rec.EventID, rec.State)

	fmt.Fprintln(w, "10. invoice.payment_succeeded evt_demo_G, the twin, enqueues it again")
	a = idempotencytest.Deliver(h, evtG, secret)
	fmt.Fprintf(w, "   -> %d %s   credits: %d   enqueued: %t (once per invoice, ever)\n", a.Status, a.Body, accts.get("acct_task"), enqueued)

	fmt.Fprintln(w, "11. a worker sends the receipt; the provider accepts it, but its answer is lost on the way back")
	provider.loseNextAnswer = true
	if err := work(); err != nil {
		return err
	}
	fmt.Fprintf(w, "   provider: %d email sent; the task is not recorded done (as when a worker dies after the call), so it runs again\n",
		len(provider.sent))

	fmt.Fprintln(w, "12. 1 s later on the inbox's clock (the backoff), the retry carries the same idempotency key")
	clock.Advance(time.Second)
	if err := work(); err != nil {
		return err
	}
	keys := provider.requests
	if slices.ContainsFunc(keys, func(k string) bool { return k != keys[0] }) {
		return fmt.Errorf("the attempts used different idempotency keys: %q", keys)
	}
	fmt.Fprintf(w, "   provider: %d requests, both with key %.21s...; %d email sent\n", len(keys), keys[0], len(provider.sent))
	st, err := inbox.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   inbox: tasks processed %d, pending %d, failed %d, dead letter %d\n", st.TaskCounts[idempotency.InboxProcessed],
		st.TaskCounts[idempotency.InboxPending], st.TaskCounts[idempotency.InboxFailed], st.TaskCounts[idempotency.InboxDeadLetter])
	return nil
}
