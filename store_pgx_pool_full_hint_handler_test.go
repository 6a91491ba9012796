package idempotency_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestPgxHandlerWaitingForAPoolConnectionSaysSo: a handler that reads
// through a *sql.DB opened on the store's pool (stdlib.OpenDBFromPool)
// while its transaction holds one of the pool's connections waits, on a
// pool whose other connections are in use, for one until Config.Timeout:
// its error, the handler's own, said "context deadline exceeded" alone,
// where the store's claim that waited so names the pool's MaxConns and
// the cure. It says so too, and is still the handler's error (errors.Is
// finds it), ErrTimeout and context.DeadlineExceeded. A handler whose
// own wait ran out on a pool with a connection free says nothing of a
// pool.
func TestPgxHandlerWaitingForAPoolConnectionSaysSo(t *testing.T) {
	t.Parallel()
	pdb := pgtest.NewWithConfig(t, func(c *pgxpool.Config) { c.MaxConns = 2 })
	b := newPgBackendIn(t, pdb, idempotency.PgxConfig{}, func(p *pgxpool.Pool) idempotency.PgxBeginner { return p })
	db := stdlib.OpenDBFromPool(pdb.Pool)
	db.SetMaxIdleConns(0) // a connection it got is the pool's again once used
	t.Cleanup(func() { _ = db.Close() })
	var handlerErr error
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, _ idempotency.Tx, _ idempotency.Event[*stripe.Invoice]) error {
		if _, err := db.ExecContext(ctx, "SELECT 1"); err != nil {
			handlerErr = err
			return err
		}
		<-ctx.Done() // the pool had a connection free: the handler's own wait runs out
		handlerErr = ctx.Err()
		return handlerErr
	})
	results := make(chan idempotency.Result, 1)
	// The handler's wait on a full pool runs out at Timeout, after the
	// claim, which must not: 10 s, which a loaded machine's claim does not
	// outlast (2 s it did). On a pool with a connection free, whichever
	// wait runs out first, the claim's or the handler's, says nothing of a
	// pool: 2 s.
	handler := func(timeout time.Duration) http.Handler {
		h, err := idempotency.NewHandler(b.store, hs, idempotency.Config{
			Secrets: []string{testSecret}, Timeout: timeout, Logger: discardLogger(),
			OnResult: func(r idempotency.Result) { results <- r },
		})
		require.NoError(t, err)
		return h
	}

	held, err := pdb.Pool.Acquire(t.Context()) // the pool's other connection, in use
	require.NoError(t, err)
	release := sync.OnceFunc(held.Release)
	t.Cleanup(release)
	require.Equal(t, http.StatusInternalServerError,
		idempotencytest.Deliver(handler(10*time.Second), invoicePayload(t, "evt_handler_pool_full", "in_handler_pool_full", "acct_1"), testSecret).Status)
	r := recv(t, results, "the delivery's Result")
	require.ErrorIs(t, r.Err, handlerErr, "the handler's error")
	require.ErrorIs(t, r.Err, idempotency.ErrTimeout)
	require.ErrorIs(t, r.Err, context.DeadlineExceeded)
	require.ErrorContains(t, r.Err, "context deadline exceeded "+poolFullHint)
	release()
	// The timed-out transaction's connection, closed by pgx, leaves the
	// pool in the background: on a loaded machine it was still counted
	// in use as the next delivery waited.
	require.Eventually(t, func() bool { return pdb.Pool.Stat().AcquiredConns() == 0 }, time.Minute, 5*time.Millisecond,
		"the connections went back to the pool")

	require.Equal(t, http.StatusInternalServerError,
		idempotencytest.Deliver(handler(2*time.Second), invoicePayload(t, "evt_handler_pool_free", "in_handler_pool_free", "acct_1"), testSecret).Status)
	r = recv(t, results, "the delivery's Result")
	require.ErrorIs(t, r.Err, context.DeadlineExceeded)
	require.NotContains(t, r.Err.Error(), "MaxConns", "a connection was free")
}
