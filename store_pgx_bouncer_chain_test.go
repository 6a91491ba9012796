package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestPgxBouncerInboxChainedCommits: behind PgBouncer in transaction
// pooling mode, a worker's COMMIT AND CHAIN keeps the server connection
// for the next event's transaction (PgBouncer sees a transaction still
// open), and each event keeps a transaction of its own: an attempt whose
// handler swallowed a failed statement (its transaction aborted) fails
// before its commit, keeps nothing and begins nothing, and the event after
// it begins alone, on whatever server connection PgBouncer lends.
func TestPgxBouncerInboxChainedCommits(t *testing.T) {
	t.Parallel()
	b := newBouncerBackend(t, idempotency.PgxConfig{})
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[pgInboxObject]) error {
		if err := b.add(ctx, tx, ev.Object.ID, 1); err != nil {
			return err
		}
		if ev.ID == "evt_bchain_3" {
			_, _ = idempotency.PgxTx(tx).Exec(ctx, `SELECT 1/0`) // dropped: the transaction is aborted
		}
		return nil
	})
	var mu sync.Mutex
	var results []idempotency.Result
	cfg := idempotency.InboxConfig{PollOnly: true, Lease: time.Minute, Timeout: 10 * time.Second, Logger: discardLogger()}
	observeResults(&cfg, func(r idempotency.Result) {
		mu.Lock()
		defer mu.Unlock()
		results = append(results, r)
	})
	in, err := idempotency.NewInbox(b.store, hs, cfg)
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	const events = 5
	for i := 1; i <= events; i++ {
		a := idempotencytest.Deliver(h, pgInboxPayload(t, fmt.Sprintf("evt_bchain_%d", i), fmt.Sprintf("in_bchain_%d", i), int64(i)), testSecret)
		require.Equal(t, http.StatusOK, a.Status, a.Body)
	}
	leased, err := idempotency.LeaseInbox(t.Context(), in, events)
	require.NoError(t, err)
	require.Len(t, leased, events)
	require.Equal(t, 3, idempotency.ApplyChained(t.Context(), in, leased...), "the commits of 1, 2 and 4 began the next event")

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, results, events)
	for i := 1; i <= events; i++ {
		id := fmt.Sprintf("evt_bchain_%d", i)
		r := results[i-1]
		require.Equal(t, id, r.EventID)
		want, state := 1, idempotency.InboxProcessed
		if i == 3 {
			want, state = 0, idempotency.InboxFailed
			require.ErrorContains(t, r.Err, "the handler returned nil after a statement of its transaction failed")
		} else {
			require.NoError(t, r.Err, id)
		}
		require.Equal(t, want, b.get(t, fmt.Sprintf("in_bchain_%d", i)), "%s applied", id)
		rec, ok, err := in.Lookup(t.Context(), id)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, state, rec.State, id)
		_, claimed, err := b.store.LookupEvent(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, want == 1, claimed, "%s claimed with its writes", id)
	}
}
