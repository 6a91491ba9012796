package idempotency_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// A Scan that fails ends pgx's rows, as a failure does: the handler that
// returns its error, without closing the rows, fails with that error, and
// one that goes on may send its next statement. Before, the rows stayed
// open for the store: the next statement failed with ErrTxBusy, and the
// attempt too, in place of the Scan's error.
func TestPgxRowsScanErrorEndsRows(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	const query = `SELECT v FROM (VALUES ('1'), (NULL), ('3')) AS t(v)`

	_, err := b.store.Run(ctx, idempotency.Claim{EventID: "evt_scan_error", EventType: "invoice.paid"},
		func(hctx context.Context, tx idempotency.Tx) error {
			rows, err := idempotency.PgxTx(tx).Query(hctx, query)
			if err != nil {
				return err
			}
			for rows.Next() {
				var v string
				if err := rows.Scan(&v); err != nil {
					return err // NULL into a string
				}
			}
			return rows.Err()
		})
	var scanErr pgx.ScanArgError
	require.ErrorAs(t, err, &scanErr, "the Scan's error, not %v", err)
	require.NotErrorIs(t, err, idempotency.ErrTxBusy)

	out, err := b.store.Run(ctx, idempotency.Claim{EventID: "evt_scan_error_goes_on", EventType: "invoice.paid"},
		func(hctx context.Context, tx idempotency.Tx) error {
			rows, err := idempotency.PgxTx(tx).Query(hctx, query)
			if err != nil {
				return err
			}
			n := 0
			for rows.Next() {
				var v string
				if err := rows.Scan(&v); err != nil {
					break // counts what it could read
				}
				n++
			}
			if !errors.As(rows.Err(), new(pgx.ScanArgError)) {
				return errors.New("rows.Err is not the Scan's error")
			}
			return b.add(hctx, tx, "scan_error", n)
		})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	require.Equal(t, 1, b.get(t, "scan_error"))
}
