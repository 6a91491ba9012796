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

// TestPgxInboxChainedSessionEndsBeforeHandlerWithoutSQL: as in
// TestPgxInboxChainedTransactionSessionEnds, the session of a worker ends
// while the transaction its commit began for the next event waits idle on
// it; here the next event's handler sends no statement (it has nothing to
// write for this event). The attempt's first statement is then its
// COMMIT, which fails with a session the attempt never got to use: the
// event is claimed again on another connection and applied in its first
// attempt, not failed, counted and retried after a backoff.
func TestPgxInboxChainedSessionEndsBeforeHandlerWithoutSQL(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	p := newPgInbox(t, b, idempotency.InboxConfig{Lease: time.Minute, Timeout: 10 * time.Second})
	admin := pgtest.AdminPool(t)
	var pid uint32 // evt_chain_1's session, which its commit left in evt_chain_2's transaction
	runs := 0
	p.hs = idempotency.NewHandlers()
	idempotency.On(p.hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[pgInboxObject]) error {
		if ev.ID == "evt_chain_1" {
			pid = idempotency.PgxTx(tx).Conn().PgConn().PID()
			return b.add(ctx, tx, ev.Object.ID, 1)
		}
		runs++
		return nil // nothing to write
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
	for i := 1; i <= 2; i++ {
		p.deliver(t, fmt.Sprintf("evt_chain_%d", i), fmt.Sprintf("in_chain_%d", i), int64(i))
	}
	require.Equal(t, 1, idempotency.ApplyChained(t.Context(), p.inbox, p.lease(t, 2)...), "evt_chain_1's commit began evt_chain_2")
	require.Equal(t, []string{"evt_chain_1", "evt_chain_2"}, resultIDs(t, p), "no attempt failed")
	rec := p.record(t, "evt_chain_2")
	require.Equal(t, idempotency.InboxProcessed, rec.State)
	require.Equal(t, 1, rec.Attempt, "applied in its first attempt")
	_, claimed, err := b.store.LookupEvent(t.Context(), "evt_chain_2")
	require.NoError(t, err)
	require.True(t, claimed)
	require.Equal(t, 2, runs, "the handler ran again, on another connection")
}

// TestPgxInboxChainedSessionEndsBeforeCommit: the session of a chained
// transaction ends after the handler's one statement went through, before
// the COMMIT: the attempt used the session, so it fails, as it does
// unchained; its handler is not run again within it.
func TestPgxInboxChainedSessionEndsBeforeCommit(t *testing.T) {
	t.Parallel()
	b, p, leased := chainInbox(t, 2)
	admin := pgtest.AdminPool(t)
	runs := 0
	p.write = func(ctx context.Context, tx idempotency.Tx, eventID string) error {
		if eventID != "evt_chain_2" {
			return nil
		}
		runs++
		// The handler's statement (its counter) went through; the session
		// ends before the store commits.
		var ended bool
		require.NoError(t, admin.QueryRow(ctx, `SELECT pg_terminate_backend($1, 10000)`,
			int64(idempotency.PgxTx(tx).Conn().PgConn().PID())).Scan(&ended))
		require.True(t, ended)
		return nil
	}
	require.Equal(t, 1, idempotency.ApplyChained(t.Context(), p.inbox, leased...))
	requireChainResults(t, b, p, []int{1, 0}, []idempotency.InboxState{idempotency.InboxProcessed, idempotency.InboxFailed})
	require.ErrorContains(t, p.results[1].Err, "commit")
	require.Equal(t, 1, runs, "the handler ran once")
	require.Equal(t, 1, p.record(t, "evt_chain_2").Attempt)
}
