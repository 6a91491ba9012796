package idempotency_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// A handler that ignores the error of one of its statements (a unique
// violation taken for "credited already") and returns nil cannot commit:
// PostgreSQL failed the whole transaction with that statement, the
// event's claim included. The attempt fails, nothing is kept, and its
// error says why and what to do, rather than pgx's "commit unexpectedly
// resulted in rollback". A statement whose failure the handler rolled
// back to a savepoint of its own, or a Skip, is no such case.
func TestPgxHandlerIgnoringAFailedStatement(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	credit := func(savepoint bool) idempotency.ApplyFunc {
		return func(hctx context.Context, tx idempotency.Tx) error {
			insert := func(db pgx.Tx) error {
				_, err := db.Exec(hctx, `INSERT INTO counters (name, value) VALUES ('in_1', 100)`)
				return err
			}
			var err error
			if savepoint {
				err = pgx.BeginFunc(hctx, idempotency.PgxTx(tx), insert) // rolled back to when it fails
			} else {
				err = insert(idempotency.PgxTx(tx))
			}
			if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "23505" {
				return nil // credited already: wrong without the savepoint
			}
			return err
		}
	}
	run := func(eventID string, savepoint bool) (idempotency.Outcome, error) {
		return b.store.Run(ctx, idempotency.Claim{EventID: eventID, EventType: "invoice.paid"}, credit(savepoint))
	}

	out, err := run("evt_paid", false)
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)

	out, err = run("evt_twin", false)
	require.Equal(t, idempotency.OutcomeFailed, out)
	require.EqualError(t, err, "idempotency: the handler returned nil after a statement of its transaction failed, "+
		"which aborted the transaction, the event's claim with it (nothing kept): return the statement's error "+
		"(or a Skip), or run the statement in a savepoint of its own (PgxTx(tx).Begin) and roll back to it")
	_, claimed, err := b.store.LookupEvent(ctx, "evt_twin")
	require.NoError(t, err)
	require.False(t, claimed, "nothing kept")
	require.Equal(t, 100, b.get(t, "in_1"))

	out, err = b.store.Run(ctx, idempotency.Claim{EventID: "evt_skipped", EventType: "invoice.paid"},
		func(hctx context.Context, tx idempotency.Tx) error {
			if _, err := idempotency.PgxTx(tx).Exec(hctx, `INSERT INTO counters (name, value) VALUES ('in_1', 100)`); err != nil {
				return idempotency.Skip("credited already")
			}
			return nil
		})
	require.NoError(t, err, "a Skip rolls back to the store's savepoint, before the failed statement")
	require.Equal(t, idempotency.OutcomeSkipped, out)

	out, err = run("evt_twin", true)
	require.NoError(t, err, "rolled back to its savepoint, the transaction goes on")
	require.Equal(t, idempotency.OutcomeProcessed, out)
	require.Equal(t, 100, b.get(t, "in_1"))
}

// TestPgxHandlerIgnoringAFailedStatementThenTheSessionEnds: a handler that
// ignores a failed statement and whose session then ends (its backend
// terminated, as in a failover) before it returns nil is answered as the
// database gone, to be retried as such, not told that it ignored a failed
// statement: the transaction, aborted or not, died with its session.
func TestPgxHandlerIgnoringAFailedStatementThenTheSessionEnds(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	out, err := b.store.Run(t.Context(), idempotency.Claim{EventID: "evt_gone", EventType: "invoice.paid"},
		func(hctx context.Context, tx idempotency.Tx) error {
			db := idempotency.PgxTx(tx)
			var pid int32
			if err := db.QueryRow(hctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
				return err
			}
			_, _ = db.Exec(hctx, `SELECT 1/0`) // ignored: the transaction is aborted
			terminate(t, pid)
			_, _ = db.Exec(hctx, `SELECT 1`) // ignored: the session is gone, and pgx knows it
			return nil
		})
	require.Equal(t, idempotency.OutcomeUnavailable, out)
	require.ErrorIs(t, err, idempotency.ErrStoreUnavailable)
	require.NotContains(t, err.Error(), "returned nil after a statement")
	_, claimed, err := b.store.LookupEvent(t.Context(), "evt_gone")
	require.NoError(t, err)
	require.False(t, claimed, "nothing kept")
}
