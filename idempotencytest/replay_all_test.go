package idempotencytest_test

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestReplayAllTwins: twin events of one invoice (invoice.paid and
// invoice.payment_succeeded, two event ids), each sent in copies at once
// by ReplayAll, are each processed once and credit the invoice once, on
// both stores; the answers come in the payloads' order.
func TestReplayAllTwins(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := &credits{m: map[string]int{}}
			credit := func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
				first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID)
				if err != nil || !first {
					return err
				}
				account := ev.Object.Metadata["account_id"]
				tx.AfterCommit(func(context.Context) {
					c.mu.Lock()
					defer c.mu.Unlock()
					c.m[account] += 100
				})
				return nil
			}
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", credit)
			idempotency.On(hs, "invoice.payment_succeeded", credit)
			h, err := idempotency.NewHandler(store(t), hs, idempotency.Config{Secrets: []string{testSecret}, Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, err)

			paid := invoicePaid(t, "evt_twin_paid", "in_twin", "acct_twin")
			succeeded := idempotencytest.Derive(paid, map[string]any{"id": "evt_twin_succeeded", "type": "invoice.payment_succeeded"})
			const n = 10
			answers := idempotencytest.ReplayAll(h, [][]byte{paid, succeeded}, testSecret, n)
			require.Len(t, answers, 2*n)
			require.Equal(t, map[int]int{200: 2 * n}, answers.Statuses())
			for i, id := range []string{"evt_twin_paid", "evt_twin_succeeded"} {
				of := answers[i*n : (i+1)*n]
				for _, a := range of {
					require.Equal(t, id, a.EventID)
				}
				require.Equal(t, 1, of.Count(idempotency.OutcomeProcessed), "%s: each event id is new", id)
				require.Equal(t, n-1, of.Count(idempotency.OutcomeDuplicate), id)
			}
			require.Equal(t, 100, c.get("acct_twin"), "two events about one invoice credit once")
		})
	}
}

// TestReplayAllReleasesTogether: every delivery of ReplayAll is in the
// handler before any returns (a handler that waits for all of them, in a
// synctest bubble, which reports a deadlock if they were sent one at a
// time); none or no copies deliver nothing; a negative n panics, naming
// ReplayAll.
func TestReplayAllReleasesTogether(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const payloads, n = 3, 4
		var mu sync.Mutex
		arrived := 0
		all := make(chan struct{})
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			arrived++
			if arrived == payloads*n {
				close(all)
			}
			mu.Unlock()
			<-all
		})
		ps := make([][]byte, payloads)
		for i := range ps {
			ps[i] = invoicePaid(t, "evt_together_"+string(rune('a'+i)), "in_together", "acct_together")
		}
		require.Len(t, idempotencytest.ReplayAll(h, ps, testSecret, n), payloads*n)
	})
	require.Empty(t, idempotencytest.ReplayAll(http.NotFoundHandler(), nil, testSecret, 3))
	require.Empty(t, idempotencytest.ReplayAll(http.NotFoundHandler(), [][]byte{[]byte(`{}`)}, testSecret, 0))
	require.PanicsWithValue(t, "idempotencytest: ReplayAll: n is -1; it must not be negative", func() {
		idempotencytest.ReplayAll(http.NotFoundHandler(), nil, testSecret, -1)
	})
}
