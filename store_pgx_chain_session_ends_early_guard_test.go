package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed-a84bb619/idempotency"
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
	applyChainedSessionEnds(t, b, p, &pid)
}
