package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// A Next on a query's rows refused because another goroutine's call on
// them was running reports false, and Err reports the refusal, ErrTxBusy,
// also once the other call has ended, as pgx's Err reports what ended its
// rows.
// Before, Err asked pgx's rows again once it could, and reported nil: the
// rows looked read to their end.
func TestPgxRowsRefusedNextReportedByErr(t *testing.T) {
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	holder, err := b.db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer holder.Release()
	_, err = holder.Exec(ctx, `SELECT pg_advisory_lock(4545)`)
	require.NoError(t, err)

	var afterRefusal error
	_, err = b.store.Run(ctx, idempotency.Claim{EventID: "evt_rows_refused", EventType: "invoice.paid"},
		func(hctx context.Context, tx idempotency.Tx) error {
			rows, err := idempotency.PgxTx(tx).Query(hctx,
				`SELECT g, CASE WHEN g = 100000 THEN pg_advisory_xact_lock(4545)::text END FROM generate_series(1, 100000) g`)
			if err != nil {
				return err
			}
			defer rows.Close()
			read := make(chan struct{})
			go func() { // reads until the row that waits for the lock
				defer close(read)
				for rows.Next() {
				}
			}()
			require.Eventually(t, func() bool { return b.waiting(t) == 1 }, 10*time.Second, 5*time.Millisecond)
			require.False(t, rows.Next(), "refused while the other goroutine's Next runs")
			_, err = holder.Exec(ctx, `SELECT pg_advisory_unlock(4545)`)
			require.NoError(t, err)
			<-read
			afterRefusal = rows.Err()
			return nil
		})
	require.NoError(t, err)
	require.ErrorIs(t, afterRefusal, idempotency.ErrTxBusy)
}
