package idempotencytest_test

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// appliedEvents counts the applications of each event id; a handler's
// writes apply when its transaction commits.
type appliedEvents struct {
	mu sync.Mutex
	m  map[string]int
}

func (a *appliedEvents) counts() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.m)
}

// invoicesPaid returns handlers of invoice.paid that count their
// applications.
func invoicesPaid() (*idempotency.Handlers, *appliedEvents) {
	applied := &appliedEvents{m: map[string]int{}}
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		tx.AfterCommit(func(context.Context) {
			applied.mu.Lock()
			defer applied.mu.Unlock()
			applied.m[ev.ID]++
		})
		return nil
	})
	return hs, applied
}

// TestRecoverThroughV1Events: a test of Recover on V1Events, on both
// stores: two events delivered and listed, one listed only (missed).
// The synchronous Handler's Recover applies the missed one once, the
// delivered ones duplicates, and moves its checkpoint to the newest; run
// again, it continues the checkpoint and applies nothing. An Inbox's
// Handler stores the missed one, listed as undelivered, for its workers,
// which apply it once; run again, it is a duplicate. Every request
// Recover counts reached the fake.
func TestRecoverThroughV1Events(t *testing.T) {
	t.Parallel()
	onBothStores(t, func(t *testing.T, store idempotency.Store) {
		now := time.Now()
		payload := func(id string, created time.Time) []byte {
			return snapshot(t, id, "invoice.paid", "", created.Unix())
		}

		t.Run("synchronous", func(t *testing.T) {
			hs, applied := invoicesPaid()
			h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, err)
			api := idempotencytest.NewV1Events()
			for _, id := range []string{"evt_1", "evt_2"} {
				a := idempotencytest.Deliver(h, api.Add(payload(id, now.Add(-time.Minute))), testSecret)
				require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
			}
			api.AddUndelivered(payload("evt_missed", now.Add(-30*time.Second)))
			client := idempotencytest.NewStripeClient("sk_test_123", api)
			opts := idempotency.RecoverOptions{Since: now.Add(-time.Hour), Checkpoint: "kit", PageSize: 2, RequestsPerSecond: 100}

			rep, err := h.Recover(t.Context(), client, opts)
			require.NoError(t, err)
			require.Equal(t, idempotency.RecoverReport{Listed: 3, Processed: 1, Duplicate: 2, Requests: api.Requests(),
				LastEventID: "evt_missed"}, rep)
			before := api.Requests()
			rep, err = h.Recover(t.Context(), client, opts)
			require.NoError(t, err)
			require.Equal(t, idempotency.RecoverReport{Listed: 3, Duplicate: 3, Requests: api.Requests() - before, Resumed: true,
				LastEventID: "evt_missed"}, rep)
			require.Equal(t, map[string]int{"evt_1": 1, "evt_2": 1, "evt_missed": 1}, applied.counts())
		})

		t.Run("inbox", func(t *testing.T) {
			hs, applied := invoicesPaid()
			clock := idempotencytest.NewClock(now)
			inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: clock.Now, Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, err)
			h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, err)
			api := idempotencytest.NewV1Events()
			a := idempotencytest.Deliver(h, api.Add(payload("evt_in_1", now.Add(-time.Minute))), testSecret)
			require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
			api.AddUndelivered(payload("evt_in_missed", now.Add(-30*time.Second)))
			client := idempotencytest.NewStripeClient("sk_test_123", api)
			opts := idempotency.RecoverOptions{Since: now.Add(-time.Hour), OnlyUndelivered: true}

			rep, err := h.Recover(t.Context(), client, opts)
			require.NoError(t, err)
			require.Equal(t, idempotency.RecoverReport{Listed: 1, Queued: 1, Requests: api.Requests(), LastEventID: "evt_in_missed"}, rep)
			n, err := inbox.WorkDue(t.Context())
			require.NoError(t, err)
			require.Equal(t, 2, n)
			rep, err = h.Recover(t.Context(), client, opts)
			require.NoError(t, err)
			require.Equal(t, 1, rep.Duplicate, "%+v", rep)
			n, err = inbox.WorkDue(t.Context())
			require.NoError(t, err)
			require.Zero(t, n)
			require.Equal(t, map[string]int{"evt_in_1": 1, "evt_in_missed": 1}, applied.counts())
		})
	})
}
