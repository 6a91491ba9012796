package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxInboxChainedSessionEndsBeforeHandlerBegins: as in
// TestPgxInboxChainedTransactionSessionEnds, the session of a worker ends
// while the transaction its commit began for the next event waits idle on
// it; here the next event's handler opens with PgxTx(tx).Begin, a
// savepoint, as a handler that runs its writes in a pseudo-nested
// transaction does. That Begin is the attempt's first statement, and it
// failed with a session the attempt never got to use: the event is
// claimed again on another connection and applied in its first attempt,
// not failed, counted and retried after a backoff.
func TestPgxInboxChainedSessionEndsBeforeHandlerBegins(t *testing.T) {
	t.Parallel()
	for _, early := range []bool{false, true} {
		name := map[bool]string{false: "no-early-guard", true: "early-guard"}[early]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := newPgBackend(t, idempotency.PgxConfig{})
			p := newPgInbox(t, b, idempotency.InboxConfig{Lease: time.Minute, Timeout: 10 * time.Second})
			var pid uint32 // evt_chain_1's session, which its commit left in evt_chain_2's transaction
			p.hs = idempotency.NewHandlers()
			var grant *idempotency.Action[struct{}]
			if early {
				// Declared KeyIsObjectID: the chained claim claims its key
				// early, and Begin releases it first.
				grant = idempotency.NewAction(p.hs, idempotency.ActionSpec{Name: "grant", Key: "invoice id", KeyIsObjectID: true},
					func(ctx context.Context, tx idempotency.Tx, key string, _ struct{}) error {
						return b.add(ctx, tx, "granted_"+key, 1)
					})
			}
			idempotency.On(p.hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[pgInboxObject]) error {
				q := idempotency.PgxTx(tx)
				if ev.ID == "evt_chain_1" {
					pid = q.Conn().PgConn().PID()
				}
				nested, err := q.Begin(ctx)
				if err != nil {
					return err
				}
				if _, err := nested.Exec(ctx, `INSERT INTO counters (name, value) VALUES ($1, 1)
ON CONFLICT (name) DO UPDATE SET value = counters.value + 1`, ev.Object.ID); err != nil {
					return err
				}
				if grant != nil {
					if _, err := grant.Do(ctx, tx, ev.Object.ID, struct{}{}); err != nil {
						return err
					}
				}
				return nested.Commit(ctx)
			})
			applyChainedSessionEnds(t, b, p, &pid)
			if early {
				require.Equal(t, 1, b.get(t, "granted_in_chain_2"), "the action ran once, in the savepoint")
			}
		})
	}
}
