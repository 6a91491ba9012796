package idempotency_test

import (
	"context"
	"errors"
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
//
// Two goroutines read the rows at once. The last row waits for a lock the
// test holds, so the rows cannot end before one goroutine's Next is
// refused: by overlapping the other's, or, at the latest, while the other
// waits in Next for that row. The first goroutine to stop was refused; the
// lock is released then, and Err is read once both have stopped. (The
// test used to check the refusal from the handler's goroutine once the
// server waited for the lock; the reading goroutine could still be
// between two calls of Next then, the handler's Next read a row, and the
// rows' Close, waiting for the lock never released, hung the test binary.)
func TestPgxRowsRefusedNextReportedByErr(t *testing.T) {
	t.Parallel()
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
			stopped := make(chan struct{}, 2)
			for range 2 {
				go func() {
					for rows.Next() {
					}
					stopped <- struct{}{}
				}()
			}
			var refused error
			waiting := 2 // goroutines still reading
			select {
			case <-stopped: // refused: the rows cannot end while the lock is held
				waiting--
			case <-time.After(time.Minute):
				// Neither was refused (the calls wait for each other):
				// released, the rows end, and the test fails, not hangs.
				refused = errors.New("no Next was refused within a minute")
			}
			if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock(4545)`); err != nil {
				return err
			}
			for range waiting {
				<-stopped
			}
			afterRefusal = rows.Err()
			return refused
		})
	require.NoError(t, err)
	require.ErrorIs(t, afterRefusal, idempotency.ErrTxBusy)
}
