package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// Behind PgBouncer, a handler that returns with a query's rows open has
// its context cancelled by the store, which closes the rows and rolls the
// attempt back. The server connection PgBouncer lent for that transaction
// goes back to its pool clean: the next transactions, of this client and
// of another, run as usual, and no session of the test's is left in a
// transaction.
func TestPgxBouncerRowsLeftOpenReturnTheServerClean(t *testing.T) {
	t.Parallel()
	bouncer := pgtest.PgBouncer(t)
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(bouncer.LogFile())
			t.Logf("pgbouncer log:\n%s", log)
		}
	})
	db := bouncer.New(t, func(c *pgxpool.Config) {
		c.MaxConns = 1 // every transaction on the same client connection
	})
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(t.Context()))
	b := &bouncerBackend{db: db, store: store, counters: qualifiedName(db.Schema, "counters")}
	_, err = db.Pool.Exec(t.Context(), `CREATE TABLE `+b.counters+` (name text PRIMARY KEY, value bigint NOT NULL)`)
	require.NoError(t, err)
	ctx := t.Context()

	for i, query := range []string{
		`SELECT g FROM generate_series(1, 200000) g`, // more than the buffers hold
		`SELECT g FROM generate_series(1, 3) g`,      // all of it buffered
	} {
		_, err := store.Run(ctx, idempotency.Claim{EventID: "evt_left_" + string(rune('a'+i)), EventType: "invoice.paid"},
			func(hctx context.Context, tx idempotency.Tx) error {
				if err := b.add(hctx, tx, "left", 1); err != nil {
					return err
				}
				rows, err := idempotency.PgxTx(tx).Query(hctx, query)
				if err != nil {
					return err
				}
				if !rows.Next() {
					return errors.New("no first row")
				}
				return nil
			})
		require.ErrorIs(t, err, idempotency.ErrTxBusy, query)
	}
	for i := range 20 {
		out, err := store.Run(ctx, idempotency.Claim{EventID: "evt_after_" + string(rune('a'+i)), EventType: "invoice.paid"},
			func(hctx context.Context, tx idempotency.Tx) error {
				var slept int
				if err := idempotency.PgxTx(tx).QueryRow(hctx, `SELECT 1 FROM pg_sleep(0.01)`).Scan(&slept); err != nil {
					return err
				}
				return b.add(hctx, tx, "after", 1)
			})
		require.NoError(t, err)
		require.Equal(t, idempotency.OutcomeProcessed, out)
	}
	require.Zero(t, b.get(t, "left"))
	require.Equal(t, 20, b.get(t, "after"))
	var inTx int
	require.NoError(t, pgtest.AdminPool(t).QueryRow(ctx,
		`SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND state <> 'idle'`, db.Schema).Scan(&inTx))
	require.Zero(t, inTx, "sessions left busy or in a transaction")
}

func qualifiedName(a, b string) string { return quoteIdent(a) + "." + quoteIdent(b) }

// Behind PgBouncer, a handler's pseudo-nested transaction (PgxTx's Begin,
// a savepoint) over a key claimed early, with a query's rows and a
// batch's results read inside it, rolls back with the guard it claimed:
// the next event about the key finds it free, and claims it for good.
func TestPgxBouncerNestedTxWithEarlyGuardAndResults(t *testing.T) {
	t.Parallel()
	b := newBouncerBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	for i, keep := range []bool{false, true} {
		c := idempotency.Claim{EventID: fmt.Sprintf("evt_nested_%d", i), EventType: "invoice.paid", ObjectID: "in_nested",
			Guards: []idempotency.GuardKey{{Scope: "action:grant", Key: "in_nested"}}}
		var first bool
		out, err := b.store.Run(ctx, c, func(hctx context.Context, tx idempotency.Tx) error {
			nested, err := idempotency.PgxTx(tx).Begin(hctx)
			if err != nil {
				return err
			}
			if first, err = tx.Guard(hctx, "action:grant", "in_nested"); err != nil {
				return err
			}
			rows, err := nested.Query(hctx, `SELECT g FROM generate_series(1, 5) g`)
			if err != nil {
				return err
			}
			sum := 0
			for rows.Next() {
				var g int
				if err := rows.Scan(&g); err != nil {
					return err
				}
				sum += g
			}
			if err := rows.Err(); err != nil {
				return err
			}
			batch := &pgx.Batch{}
			batch.Queue(`SELECT 1`)
			batch.Queue(`INSERT INTO `+b.counters+` (name, value) VALUES ('nested', $1) ON CONFLICT (name) DO UPDATE SET value = `+b.counters+`.value + EXCLUDED.value`, sum)
			if err := nested.SendBatch(hctx, batch).Close(); err != nil {
				return err
			}
			if keep {
				return nested.Commit(hctx)
			}
			return nested.Rollback(hctx)
		})
		require.NoError(t, err)
		require.Equal(t, idempotency.OutcomeProcessed, out)
		require.True(t, first, "event %d finds the key free", i)
	}
	require.Equal(t, 15, b.get(t, "nested"))
	g, ok, err := b.store.LookupGuard(ctx, "action:grant", "in_nested")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "evt_nested_1", g.EventID)
}
