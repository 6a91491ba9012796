package idempotency_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// inTx is the README's InTx (Writing handlers, "With database/sql"): a
// repository's ExecContext in the event's transaction.
type inTx struct{ tx pgx.Tx }

func (t inTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	tag, err := t.tx.Exec(ctx, query, args...)
	return driver.RowsAffected(tag.RowsAffected()), err
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// TestReadmeDatabaseSQL holds the README's "With database/sql" to what
// PostgreSQL does. A write through InTx commits and rolls back with the
// claim: a handler that fails after it and is retried credits once. One
// through the service's *sql.DB, on the store's own pool
// (stdlib.OpenDBFromPool), commits on its own: the same handler credits
// twice. A row the handler changed through PgxTx and changes again
// through that *sql.DB waits for the handler's own transaction until the
// attempt times out, the handler's write rolled back (the *sql.DB's,
// cancelled, may still commit once the row is free). InTx's Result is the driver's, and
// sql.Named fails through it where pgx.NamedArgs does not.
func TestReadmeDatabaseSQL(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := newPgBackend(t, idempotency.PgxConfig{})
	db := stdlib.OpenDBFromPool(b.db.Pool)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	_, err := db.ExecContext(ctx, `INSERT INTO counters (name, value) VALUES ('in_tx', 0), ('through_db', 0), ('twice', 0)`)
	require.NoError(t, err)

	credit := func(name string, through func(idempotency.Tx) execer, after error) idempotency.ApplyFunc {
		return func(ctx context.Context, tx idempotency.Tx) error {
			first, err := tx.Guard(ctx, "invoice-credit", name)
			if err != nil || !first {
				return err
			}
			res, err := through(tx).ExecContext(ctx, `UPDATE counters SET value = value + 100 WHERE name = $1`, name)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
			return after
		}
	}
	for _, c := range []struct {
		name    string
		through func(idempotency.Tx) execer
		want    int
	}{
		{"in_tx", func(tx idempotency.Tx) execer { return inTx{idempotency.PgxTx(tx)} }, 100},
		{"through_db", func(idempotency.Tx) execer { return db }, 200},
	} {
		claim := idempotency.Claim{EventID: "evt_" + c.name, EventType: "invoice.paid"}
		out, err := b.store.Run(ctx, claim, credit(c.name, c.through, errors.New("failed after the credit")))
		require.Equal(t, idempotency.OutcomeFailed, out, c.name)
		require.EqualError(t, err, "failed after the credit", c.name)
		out, err = b.store.Run(ctx, claim, credit(c.name, c.through, nil))
		require.NoError(t, err, c.name)
		require.Equal(t, idempotency.OutcomeProcessed, out, c.name)
		require.Equal(t, c.want, b.get(t, c.name), c.name)
	}

	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		if _, err := idempotency.PgxTx(tx).Exec(ctx, `UPDATE counters SET value = value + 1 WHERE name = 'twice'`); err != nil {
			return err
		}
		_, err := db.ExecContext(ctx, `UPDATE counters SET value = value + 1 WHERE name = 'twice'`)
		return err
	})
	results := make(chan idempotency.Result, 1)
	h, err := idempotency.NewHandler(b.store, hs, idempotency.Config{
		Secrets: []string{testSecret}, Timeout: 200 * time.Millisecond, Logger: discardLogger(),
		OnResult: func(r idempotency.Result) { results <- r },
	})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, invoicePayload(t, "evt_twice", "in_twice", "acct_1"), testSecret)
	require.Equal(t, http.StatusInternalServerError, a.Status)
	require.ErrorIs(t, recv(t, results, "the delivery's Result").Err, idempotency.ErrTimeout)
	// The handler's own +1 rolled back; the *sql.DB's, cancelled, may
	// still commit once the rollback frees the row.
	require.LessOrEqual(t, b.get(t, "twice"), 1)

	tx, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer rollbackTx(tx)
	res, err := inTx{tx}.ExecContext(ctx, `UPDATE counters SET value = value WHERE name = @name`, pgx.NamedArgs{"name": "in_tx"})
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	_, err = res.LastInsertId()
	require.Error(t, err)
	_, err = inTx{tx}.ExecContext(ctx, `UPDATE counters SET value = value WHERE name = $1`, sql.Named("name", "in_tx"))
	require.ErrorContains(t, err, "unable to encode sql.NamedArg")
	require.ErrorIs(t, tx.QueryRow(ctx, `SELECT 1 WHERE false`).Scan(new(int)), sql.ErrNoRows)
}

// TestReadmeDatabaseSQLReadDrainsThePool: a handler that only reads
// through the service's *sql.DB, opened on the store's pool, asks that
// pool for a second connection while its transaction holds one. As many
// deliveries at once as the pool's MaxConns hold every connection, and
// wait for another until Config.Timeout fails one of them, whose
// rollback frees one.
//
// The handlers wait for each other on the test's context, not the
// delivery's: on a loaded machine the second delivery may reach its
// handler after the first's Timeout ran out, and the first must still
// hold its connection then. Each delivery's claim must come before its
// Timeout, which is 10 s for that (2 s left a claim on PostgreSQL on a
// loaded machine little room): the test waits it out.
func TestReadmeDatabaseSQLReadDrainsThePool(t *testing.T) {
	t.Parallel()
	testCtx := t.Context()
	pdb := pgtest.NewWithConfig(t, func(c *pgxpool.Config) { c.MaxConns = 2 })
	b := newPgBackendIn(t, pdb, idempotency.PgxConfig{}, func(p *pgxpool.Pool) idempotency.PgxBeginner { return p })
	db := stdlib.OpenDBFromPool(b.db.Pool)
	t.Cleanup(func() { require.NoError(t, db.Close()) })

	holding, all := make(chan struct{}, 2), make(chan struct{})
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		holding <- struct{}{}
		select {
		case <-all: // both transactions hold their connection
		case <-testCtx.Done():
			return testCtx.Err()
		}
		var n int
		return db.QueryRowContext(ctx, `SELECT count(*) FROM counters`).Scan(&n)
	})
	results := make(chan idempotency.Result, 2)
	h, err := idempotency.NewHandler(b.store, hs, idempotency.Config{
		Secrets: []string{testSecret}, Timeout: 10 * time.Second, Logger: discardLogger(),
		OnResult: func(r idempotency.Result) { results <- r },
	})
	require.NoError(t, err)
	for _, id := range []string{"evt_drain_1", "evt_drain_2"} {
		go idempotencytest.Deliver(h, invoicePayload(t, id, "in_"+id, "acct_1"), testSecret)
	}
	recv(t, holding, "the first handler")
	recv(t, holding, "the second handler")
	close(all)
	r := recv(t, results, "the first delivery's Result")
	require.Equal(t, idempotency.OutcomeFailed, r.Outcome)
	require.ErrorIs(t, r.Err, idempotency.ErrTimeout)
	// Its rollback frees a connection: the other may read in time.
	r = recv(t, results, "the second delivery's Result")
	require.Contains(t, []idempotency.Outcome{idempotency.OutcomeFailed, idempotency.OutcomeProcessed}, r.Outcome)
}
