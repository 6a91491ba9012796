package main

import (
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// storeKinds are the stores the receipt tests run on.
var storeKinds = []string{"memory", "postgres"}

// newStore returns an empty store and business tables of kind: the memory
// ones, or on PostgreSQL as the server opens them, in a schema of the
// test's own.
func newStore(t *testing.T, kind string) service {
	t.Helper()
	if kind == "memory" {
		return memoryService()
	}
	db := pgtest.New(t)
	svc, closeStore, err := openPostgres(t.Context(), db.URL, startupWait, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(closeStore) // after the workers and the HTTP server, registered later, have stopped
	return svc
}

func receiptOf(account, invoice string) Email {
	// Both fixtures are invoices of 2000 usd.
	return Email{To: account, Subject: "Receipt for invoice " + invoice, Body: "Paid: 2000 usd."}
}

// TestReceiptOncePerPaidInvoice delivers paid invoices as Stripe may (a
// redelivery, the twin event, concurrent copies, an invoice without an
// account, a redelivery after the receipt went out) in both modes on both
// stores, with the workers running: the mailer sends one receipt per paid
// invoice, each asked for once, and the accounts' receipts counters agree.
func TestReceiptOncePerPaidInvoice(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		for _, mode := range []string{"sync", "inbox"} {
			t.Run(kind+"/"+mode, func(t *testing.T) {
				t.Parallel()
				svc := newStore(t, kind)
				c, inbox, mailer := serve(t, svc, mode == "inbox", idempotency.InboxConfig{})
				stopWorkers := runWorkers(t, inbox)

				paidA := invoiceEventFor(t, "invoice.paid", "evt_rcpt_1", "in_rcpt_A", "acct_r1")
				paidB := invoiceEventFor(t, "invoice.paid", "evt_rcpt_3", "in_rcpt_B", "acct_r1")
				deliveries := [][]byte{
					paidA,
					paidA, // a redelivery
					invoiceEventFor(t, "invoice.payment_succeeded", "evt_rcpt_2", "in_rcpt_A", "acct_r1"), // the twin
					invoiceEventFor(t, "invoice.payment_succeeded", "evt_rcpt_4", "in_rcpt_C", "acct_r2"),
					invoiceEventFor(t, "invoice.paid", "evt_rcpt_5", "in_rcpt_D", ""), // skipped: no account, no receipt
				}
				for range 10 {
					deliveries = append(deliveries, paidB) // concurrent copies
				}
				statuses := make([]int, len(deliveries))
				var wg sync.WaitGroup
				for i, payload := range deliveries {
					wg.Go(func() { statuses[i], _ = c.deliver(payload) })
				}
				wg.Wait()
				for i, status := range statuses {
					require.Equal(t, http.StatusOK, status, "delivery %d", i)
				}
				c.drained()
				_, body := c.deliver(paidA) // once more, after the receipt went out
				require.Equal(t, `{"outcome":"duplicate"}`, body)
				st := c.drained()
				// The memory store shows an event processed as its
				// transaction commits, before its AfterCommit funcs apply
				// the account's writes: once Run has returned, every
				// attempt's have run.
				stopWorkers()

				emails, requests := mailer.Sent()
				require.ElementsMatch(t, []Email{
					receiptOf("acct_r1", "in_rcpt_A"), receiptOf("acct_r1", "in_rcpt_B"), receiptOf("acct_r2", "in_rcpt_C"),
				}, emails)
				require.Equal(t, 3, requests, "each receipt asked for once")
				require.Equal(t, 3, st.TaskCounts["processed"])
				for account, receipts := range map[string]int{"acct_r1": 2, "acct_r2": 1} {
					acct, ok, err := svc.accounts.Get(t.Context(), account)
					require.NoError(t, err)
					require.True(t, ok)
					require.Equal(t, receipts, acct.Receipts, "%s: the receipts counter counts the emails", account)
				}
			})
		}
	}
}

// TestReceiptSentOnceWhenTheAnswerIsLost: the mailer accepts the receipt
// and its answer is lost, so the attempt fails after the email went out,
// the gap a worker dying after the call leaves too. The retry carries the
// same idempotency key and the mailer sends nothing more: one email, two
// requests. A fake clock (the inbox's, and the Handler's through
// newServer) and WorkDue drive the workers.
func TestReceiptSentOnceWhenTheAnswerIsLost(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			svc := newStore(t, kind)
			clock := idempotencytest.NewClock(time.Now())
			c, inbox, mailer := serve(t, svc, false, idempotency.InboxConfig{
				Now:     clock.Now,
				Backoff: func(int) time.Duration { return time.Minute },
			})
			_, body := c.deliver(invoiceEventFor(t, "invoice.paid", "evt_lost_1", "in_lost", "acct_lost"))
			require.Equal(t, `{"outcome":"processed"}`, body)
			const taskID = "task:send-receipt:in_lost"

			mailer.mu.Lock()
			mailer.loseAnswers = 1
			mailer.mu.Unlock()
			n, err := inbox.WorkDue(ctx)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			rec, ok, err := inbox.Lookup(ctx, taskID)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, idempotency.KindTask, rec.Kind)
			require.Equal(t, idempotency.InboxFailed, rec.State)
			require.Contains(t, rec.LastError, errAnswerLost.Error())
			emails, requests := mailer.Sent()
			require.Equal(t, []Email{receiptOf("acct_lost", "in_lost")}, emails, "accepted before the answer was lost")
			require.Equal(t, 1, requests)

			n, err = inbox.WorkDue(ctx)
			require.NoError(t, err)
			require.Zero(t, n, "not due before its backoff")
			clock.Advance(time.Minute)
			n, err = inbox.WorkDue(ctx)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			rec, _, err = inbox.Lookup(ctx, taskID)
			require.NoError(t, err)
			require.Equal(t, idempotency.InboxProcessed, rec.State)
			require.Equal(t, 2, rec.Attempt)
			emails, requests = mailer.Sent()
			require.Equal(t, []Email{receiptOf("acct_lost", "in_lost")}, emails, "the retry's key was the first's: nothing sent again")
			require.Equal(t, 2, requests)
		})
	}
}

// TestNoReceiptEmails: with -receipt-emails=false (svc.noReceipts) a paid
// invoice is credited and counted as before, and no task is enqueued.
func TestNoReceiptEmails(t *testing.T) {
	t.Parallel()
	svc := newStore(t, "memory")
	svc.noReceipts = true
	c, inbox, mailer := serve(t, svc, false, idempotency.InboxConfig{})
	runWorkers(t, inbox)
	_, body := c.deliver(invoiceEventFor(t, "invoice.paid", "evt_norcpt", "in_norcpt", "acct_nr"))
	require.Equal(t, `{"outcome":"processed"}`, body)
	st := c.drained()
	require.Zero(t, st.TaskCounts["processed"]+st.TaskCounts["pending"])
	emails, requests := mailer.Sent()
	require.Empty(t, emails)
	require.Zero(t, requests)
	acct, ok, err := svc.accounts.Get(t.Context(), "acct_nr")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 1, acct.Receipts)
	require.EqualValues(t, 100, acct.Credits)
}
