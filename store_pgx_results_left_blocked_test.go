package idempotency_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// A handler returns with a query's rows open while the query, past its
// first rows, waits on a lock: the store cancels the handler's context as
// it returns, so closing those rows ends the query rather than waiting for
// the lock, and Run fails the attempt with ErrTxBusy. Before, the rows were
// closed with the context still live: Run waited as long as the lock was
// held (here, until Run returned: never).
func TestPgxResultsLeftOpenOnBlockedQuery(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	holder, err := b.db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer holder.Release()
	_, err = holder.Exec(ctx, `SELECT pg_advisory_lock(4343)`)
	require.NoError(t, err)

	_, err = b.store.Run(ctx, idempotency.Claim{EventID: "evt_rows_blocked", EventType: "invoice.paid"},
		func(hctx context.Context, tx idempotency.Tx) error {
			if err := b.add(hctx, tx, "rows_blocked", 1); err != nil {
				return err
			}
			// The first rows fill the server's send buffer and arrive;
			// the last one waits for the lock.
			rows, err := idempotency.PgxTx(tx).Query(hctx,
				`SELECT g, CASE WHEN g = 100000 THEN pg_advisory_xact_lock(4343)::text END FROM generate_series(1, 100000) g`)
			if err != nil {
				return err
			}
			if !rows.Next() {
				return errors.New("no first row")
			}
			return nil // rows left open
		})
	require.ErrorIs(t, err, idempotency.ErrTxBusy)
	require.Zero(t, b.get(t, "rows_blocked"), "rolled back")
	_, err = holder.Exec(ctx, `SELECT pg_advisory_unlock(4343)`)
	require.NoError(t, err)
}
