package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// Store.Run with an apply that panics while a statement it began from a
// goroutine still runs: the panic goes up through runHandler, whose only
// defer cancels the context, and runOnce's deferred rollback then uses the
// connection while that statement is still on it.
func TestPanicWithStatementLeftRunning(t *testing.T) {
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	holder, err := b.db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer holder.Release()
	_, err = holder.Exec(ctx, `SELECT pg_advisory_lock(4242)`)
	require.NoError(t, err)
	left := make(chan error, 1)
	func() {
		defer func() { require.Equal(t, "boom", recover()) }()
		_, _ = b.store.Run(ctx, idempotency.Claim{EventID: "evt_panic_left", EventType: "invoice.paid"},
			func(hctx context.Context, tx idempotency.Tx) error {
				go func() {
					_, err := idempotency.PgxTx(tx).Exec(hctx, `SELECT pg_advisory_xact_lock(4242)`)
					left <- err
				}()
				require.Eventually(t, func() bool { return b.waiting(t) == 1 }, 10*time.Second, 5*time.Millisecond)
				panic("boom")
			})
	}()
	<-left
	_, err = holder.Exec(ctx, `SELECT pg_advisory_unlock(4242)`)
	require.NoError(t, err)
}
