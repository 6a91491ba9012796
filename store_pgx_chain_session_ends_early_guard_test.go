package idempotency_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestPgxInboxChainedSessionEndsBeforeEarlyGuardedAction: as in
// TestPgxInboxChainedTransactionSessionEnds, the session ends while the
// transaction a worker's commit began for the next event waits idle on
// it; here the handler opens with an action declared KeyIsObjectID, whose
// Guard the store answers from the key it claimed with the event, with no
// statement sent. The action's first write is the attempt's first
// statement, and it failed with a session the attempt never got to use:
// the event is claimed again on another connection and applied in its
// first attempt, not failed, counted and retried after a backoff.
func TestPgxInboxChainedSessionEndsBeforeEarlyGuardedAction(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	p := newPgInbox(t, b, idempotency.InboxConfig{Lease: time.Minute, Timeout: 10 * time.Second})
	admin := pgtest.AdminPool(t)
	var pid uint32 // evt_chain_1's session, which its commit left in evt_chain_2's transaction
	p.hs = idempotency.NewHandlers()
	grant := idempotency.NewAction(p.hs, idempotency.ActionSpec{Name: "grant", Key: "invoice id", KeyIsObjectID: true},
		func(ctx context.Context, tx idempotency.Tx, key string, _ struct{}) error {
			return b.add(ctx, tx, key, 1)
		})
	idempotency.On(p.hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[pgInboxObject]) error {
		if ev.ID == "evt_chain_1" {
			pid = idempotency.PgxTx(tx).Conn().PgConn().PID()
		}
		_, err := grant.Do(ctx, tx, ev.Object.ID, struct{}{})
		return err
	})
	p.onResult = func(r idempotency.Result) {
		if r.EventID != "evt_chain_1" {
			return
		}
		var ended bool
		require.NoError(t, admin.QueryRow(t.Context(), `SELECT pg_terminate_backend($1, 10000)`, int64(pid)).Scan(&ended))
		require.True(t, ended, "session %d ended", pid)
	}
	p.inbox = p.newInbox(t, b.store)
	h, err := p.inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	p.h = h
	for i := 1; i <= 2; i++ {
		p.deliver(t, fmt.Sprintf("evt_chain_%d", i), fmt.Sprintf("in_chain_%d", i), int64(i))
	}
	leased := p.lease(t, 2)
	require.Equal(t, 1, idempotency.ApplyChained(t.Context(), p.inbox, leased...), "evt_chain_1's commit began evt_chain_2")
	require.Len(t, p.results, 2)
	require.NoError(t, p.results[1].Err, "evt_chain_2's attempt: its session ended before the attempt used it")
	requireChainResults(t, b, p, []int{1, 1}, []idempotency.InboxState{idempotency.InboxProcessed, idempotency.InboxProcessed})
	require.Equal(t, 1, p.record(t, "evt_chain_2").Attempt, "applied in its first attempt")
}
