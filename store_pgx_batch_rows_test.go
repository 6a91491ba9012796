package idempotency_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// A batch's results read one query after another, a query's rows not read
// to their end before the next query's are asked for: as in pgx, the
// batch's Close ends all of them, and the handler's next statement runs.
// Before, only the last query's rows were forgotten with the batch: the
// statement failed with ErrTxBusy, and so did the attempt.
func TestPgxBatchEarlierRowsEndWithBatch(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	out, err := b.store.Run(ctx, idempotency.Claim{EventID: "evt_batch_rows", EventType: "invoice.paid"},
		func(hctx context.Context, tx idempotency.Tx) error {
			batch := &pgx.Batch{}
			batch.Queue(`SELECT g FROM generate_series(1, 3) g`)
			batch.Queue(`SELECT 2`)
			br := idempotency.PgxTx(tx).SendBatch(hctx, batch)
			first, err := br.Query()
			if err != nil {
				return err
			}
			var n int
			if !first.Next() {
				return errors.New("no first row")
			}
			if err := first.Scan(&n); err != nil {
				return err
			}
			var two int
			if err := br.QueryRow().Scan(&two); err != nil {
				return err
			}
			if err := br.Close(); err != nil {
				return err
			}
			return b.add(hctx, tx, "batch_rows", n+two)
		})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	require.Equal(t, 3, b.get(t, "batch_rows"))
}
