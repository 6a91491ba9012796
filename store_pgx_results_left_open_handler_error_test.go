package idempotency_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// A handler that fails and also leaves a query's rows open fails its
// attempt with ErrTxBusy, and the error it returned is kept in the
// attempt's error, for the log line, OnResult and the inbox's last_error.
// Before, ErrTxBusy replaced it: an operator saw the rows left open and
// never the downstream failure that made the handler return early.
func TestPgxResultsLeftOpenKeepHandlerError(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	downstream := errors.New("accounting API: 502 bad gateway")
	_, err := b.store.Run(ctx, idempotency.Claim{EventID: "evt_open_failing", EventType: "invoice.paid"},
		func(hctx context.Context, tx idempotency.Tx) error {
			if _, err := idempotency.PgxTx(tx).Query(hctx, `SELECT g FROM generate_series(1, 10) g`); err != nil {
				return err
			}
			return downstream // returns early, rows still open
		})
	require.ErrorIs(t, err, idempotency.ErrTxBusy)
	require.ErrorContains(t, err, downstream.Error())
	require.NotErrorIs(t, err, downstream, "the handler's error is kept as text: wrapped, a Skip or Permanent in it would change what the attempt means")

	// A Skip with rows open is still a failed attempt, retried: rolled
	// back, never kept as skipped.
	_, err = b.store.Run(ctx, idempotency.Claim{EventID: "evt_open_skip", EventType: "invoice.paid"},
		func(hctx context.Context, tx idempotency.Tx) error {
			if _, err := idempotency.PgxTx(tx).Query(hctx, `SELECT 1`); err != nil {
				return err
			}
			return idempotency.Skip("no account")
		})
	require.ErrorIs(t, err, idempotency.ErrTxBusy)
	require.ErrorContains(t, err, "no account")
	out, err := b.store.Run(ctx, idempotency.Claim{EventID: "evt_open_skip", EventType: "invoice.paid"},
		func(context.Context, idempotency.Tx) error { return nil })
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out, "the failed attempt left the event unclaimed")
}
