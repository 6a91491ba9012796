package idempotency_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// A transaction PostgreSQL fails for a serialization conflict runs again
// after a pause, told the attempt that failed, and one that fails for
// another reason is not paused for, nor run again.
func TestPgxRunPausesBeforeAConflictsRetry(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	var paused []int
	idempotency.SetPgxConflictWait(b.store, func(_ context.Context, attempt int) bool {
		paused = append(paused, attempt)
		return true
	})
	fail := func(code string, times int) idempotency.ApplyFunc {
		attempt := 0
		return func(ctx context.Context, tx idempotency.Tx) error {
			attempt++
			if attempt > times {
				return b.add(ctx, tx, "applied", 1)
			}
			_, err := idempotency.PgxTx(tx).Exec(ctx, `DO $$ BEGIN RAISE EXCEPTION 'made to fail' USING ERRCODE = '`+code+`'; END $$`)
			return err
		}
	}

	out, err := b.store.Run(t.Context(), idempotency.Claim{EventID: "evt_conflict", EventType: "invoice.paid"}, fail("40001", 2))
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	require.Equal(t, []int{1, 2}, paused)
	require.Equal(t, 1, b.get(t, "applied"))

	paused = nil
	out, err = b.store.Run(t.Context(), idempotency.Claim{EventID: "evt_other", EventType: "invoice.paid"}, fail("P0001", 1))
	require.Equal(t, idempotency.OutcomeFailed, out)
	pgErr, ok := errors.AsType[*pgconn.PgError](err)
	require.True(t, ok, "%v", err)
	require.Equal(t, "P0001", pgErr.Code)
	require.Empty(t, paused)
}
