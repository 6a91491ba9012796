package idempotency_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// A guard window must outlast a dead letter's: two events about one
// invoice, the first credits it under a guard, the second fails until it
// is dead-lettered. A prune whose Guards window was only as long as the
// event ids' (accepted before) deleted the guard while the dead letter
// waited, and its redrive credited the invoice a second time. Such a
// window is refused now; the least one accepted keeps the guard, and the
// redrive credits nothing.
func TestRetentionGuardsOutlastDeadLetters(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	store := idempotency.NewMemoryStore()
	var mu sync.Mutex
	credits := 0
	broken := true
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		mu.Lock()
		defer mu.Unlock()
		if ev.ID == "evt_second" && broken {
			return errors.New("a bug in the handler")
		}
		first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID)
		if err != nil || !first {
			return err
		}
		tx.AfterCommit(func(context.Context) {
			mu.Lock()
			defer mu.Unlock()
			credits++
		})
		return nil
	})
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{MaxAttempts: 1, Logger: discardLogger()})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	for _, id := range []string{"evt_first", "evt_second"} {
		a := idempotencytest.Deliver(h, invoicePayload(t, id, "in_retained", "acct_1"), testSecret)
		require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	}
	_, err = in.WorkDue(t.Context())
	require.NoError(t, err)
	stats, err := in.Stats(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, stats.Counts[idempotency.InboxDeadLetter])
	require.Equal(t, 1, credits)

	// Fifty days on, the dead letter is still there to redrive.
	later := time.Now().Add(50 * day)
	_, shortErr := store.Prune(t.Context(), idempotency.Retention{Guards: 45 * day, Now: func() time.Time { return later }})
	least := idempotency.DefaultEventIDRetention + idempotency.DefaultDeadLetterRetention
	rep, err := store.Prune(t.Context(), idempotency.Retention{Guards: least, Now: func() time.Time { return later }})
	require.NoError(t, err)
	require.Zero(t, rep.Guards, "the window keeps the guard: %+v", rep)

	mu.Lock()
	broken = false
	mu.Unlock()
	n, err := in.Redrive(t.Context(), idempotency.RedriveFilter{EventIDs: []string{"evt_second"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, credits, "the invoice is credited once")
	require.ErrorContains(t, shortErr, "Retention.Guards")
	_, err = store.Prune(t.Context(), idempotency.Retention{Guards: least - time.Second})
	require.ErrorContains(t, err, "Retention.Guards")
	_, err = store.Prune(t.Context(), idempotency.Retention{Tasks: least - time.Second})
	require.ErrorContains(t, err, "Retention.Tasks")
}
