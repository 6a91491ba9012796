package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// Store.Run with an apply that panics while a statement it began from a
// goroutine still runs: the panic goes up through runHandler, whose only
// defer cancels the context, and runOnce's deferred rollback then uses the
// connection while that statement is still on it.
func TestPanicWithStatementLeftRunning(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	holder, err := b.db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer holder.Release()
	_, err = holder.Exec(ctx, `SELECT pg_advisory_lock(4242)`)
	require.NoError(t, err)
	left := make(chan error, 1)
	func() {
		defer func() { require.Equal(t, "boom", recover()) }()
		_, _ = b.store.Run(ctx, idempotency.Claim{EventID: "evt_panic_left", EventType: "invoice.paid"},
			func(hctx context.Context, tx idempotency.Tx) error {
				go func() {
					_, err := idempotency.PgxTx(tx).Exec(hctx, `SELECT pg_advisory_xact_lock(4242)`)
					left <- err
				}()
				require.Eventually(t, func() bool { return b.waiting(t) == 1 }, 10*time.Second, 5*time.Millisecond)
				panic("boom")
			})
	}()
	<-left
	_, err = holder.Exec(ctx, `SELECT pg_advisory_unlock(4242)`)
	require.NoError(t, err)
}

// A goroutine the handler left behind still reads a query's rows when the
// handler returns: the store closes them (the goroutine's next call is
// refused) before it rolls back, and the attempt fails with ErrTxBusy. It
// was a data race in pgx, the rollback sharing the connection with the
// reading goroutine, reported as store-unavailable.
func TestPgxQueryRowsReadByLeftoverGoroutine(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	started := make(chan struct{})
	done := make(chan error, 1)
	_, err := b.store.Run(ctx, idempotency.Claim{EventID: "evt_rows_left", EventType: "invoice.paid"},
		func(hctx context.Context, tx idempotency.Tx) error {
			if err := b.add(hctx, tx, "rows_left", 1); err != nil {
				return err
			}
			go func() {
				rows, err := idempotency.PgxTx(tx).Query(hctx, `SELECT g FROM generate_series(1, 200000) g`)
				close(started)
				if err != nil {
					done <- err
					return
				}
				for rows.Next() {
				}
				rows.Close()
				done <- rows.Err()
			}()
			<-started
			return nil
		})
	require.ErrorIs(t, err, idempotency.ErrTxBusy)
	require.Error(t, <-done, "the goroutine's rows end in an error, not as if read to their end")
	require.Zero(t, b.get(t, "rows_left"), "rolled back")

	out, err := b.store.Run(ctx, idempotency.Claim{EventID: "evt_rows_left", EventType: "invoice.paid"},
		func(hctx context.Context, tx idempotency.Tx) error { return b.add(hctx, tx, "rows_left", 1) })
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	require.Equal(t, 1, b.get(t, "rows_left"))
}

// Results a handler forgets to close hold the connection, as in pgx: the
// next statement is refused with ErrTxBusy, and a handler that returns
// with them open fails its attempt with ErrTxBusy, rolled back, without
// waiting for anyone to close them. The pool's connection stays usable.
func TestPgxHandlerResultsLeftOpen(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	cases := map[string]func(ctx context.Context, tx pgx.Tx) error{
		"rows, one read": func(ctx context.Context, tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `SELECT g FROM generate_series(1, 10) g`)
			if err != nil {
				return err
			}
			if !rows.Next() {
				return errors.New("no first row")
			}
			_, err = tx.Exec(ctx, `SELECT 1`)
			if !errors.Is(err, idempotency.ErrTxBusy) {
				return fmt.Errorf("Exec with rows open: %v, want ErrTxBusy", err)
			}
			return nil
		},
		"rows, none read": func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Query(ctx, `SELECT g FROM generate_series(1, 10) g`)
			return err
		},
		"batch": func(ctx context.Context, tx pgx.Tx) error {
			batch := &pgx.Batch{}
			batch.Queue(`SELECT 1`)
			batch.Queue(`SELECT 2`)
			br := tx.SendBatch(ctx, batch)
			_, err := br.Exec()
			return err
		},
		"a batch's rows": func(ctx context.Context, tx pgx.Tx) error {
			batch := &pgx.Batch{}
			batch.Queue(`SELECT g FROM generate_series(1, 10) g`)
			batch.Queue(`SELECT 2`)
			rows, err := tx.SendBatch(ctx, batch).Query()
			if err != nil {
				return err
			}
			rows.Next()
			return nil
		},
		"a QueryRow never scanned": func(ctx context.Context, tx pgx.Tx) error {
			tx.QueryRow(ctx, `SELECT 1`)
			return nil
		},
	}
	for name, leave := range cases {
		t.Run(name, func(t *testing.T) {
			id := "evt_open_" + strings.ReplaceAll(name, " ", "_")
			_, err := b.store.Run(ctx, idempotency.Claim{EventID: id, EventType: "invoice.paid"},
				func(hctx context.Context, tx idempotency.Tx) error {
					if err := b.add(hctx, tx, id, 1); err != nil {
						return err
					}
					return leave(hctx, idempotency.PgxTx(tx))
				})
			require.ErrorIs(t, err, idempotency.ErrTxBusy)
			require.Zero(t, b.get(t, id), "rolled back")
			out, err := b.store.Run(ctx, idempotency.Claim{EventID: id, EventType: "invoice.paid"},
				func(hctx context.Context, tx idempotency.Tx) error { return b.add(hctx, tx, id, 1) })
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeProcessed, out)
			require.Equal(t, 1, b.get(t, id))
		})
	}
}

// The usual ways of reading results through PgxTx close them, and the
// event commits.
func TestPgxHandlerResultsClosed(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	cases := map[string]func(ctx context.Context, tx pgx.Tx) (int, error){
		"QueryRow": func(ctx context.Context, tx pgx.Tx) (n int, err error) {
			err = tx.QueryRow(ctx, `SELECT 3`).Scan(&n)
			return n, err
		},
		"rows read to their end, not closed": func(ctx context.Context, tx pgx.Tx) (n int, err error) {
			rows, err := tx.Query(ctx, `SELECT g FROM generate_series(1, 3) g`)
			if err != nil {
				return 0, err
			}
			for rows.Next() {
				n++
			}
			return n, rows.Err()
		},
		"rows closed early": func(ctx context.Context, tx pgx.Tx) (n int, err error) {
			rows, err := tx.Query(ctx, `SELECT g FROM generate_series(1, 100) g`)
			if err != nil {
				return 0, err
			}
			defer rows.Close()
			for rows.Next() && n < 3 {
				n++
			}
			return n, nil
		},
		"CollectRows": func(ctx context.Context, tx pgx.Tx) (int, error) {
			rows, _ := tx.Query(ctx, `SELECT g FROM generate_series(1, 3) g`)
			gs, err := pgx.CollectRows(rows, pgx.RowTo[int32])
			return len(gs), err
		},
		"a batch": func(ctx context.Context, tx pgx.Tx) (n int, err error) {
			batch := &pgx.Batch{}
			batch.Queue(`SELECT 1`).QueryRow(func(row pgx.Row) error { return row.Scan(&n) })
			batch.Queue(`SELECT g FROM generate_series(1, 2) g`).Query(func(rows pgx.Rows) error {
				for rows.Next() {
					n++
				}
				return rows.Err()
			})
			return n, tx.SendBatch(ctx, batch).Close()
		},
		"a batch's rows, read": func(ctx context.Context, tx pgx.Tx) (n int, err error) {
			batch := &pgx.Batch{}
			batch.Queue(`SELECT g FROM generate_series(1, 2) g`)
			batch.Queue(`SELECT 1`)
			br := tx.SendBatch(ctx, batch)
			defer br.Close()
			rows, err := br.Query()
			if err != nil {
				return 0, err
			}
			gs, err := pgx.CollectRows(rows, pgx.RowTo[int32])
			if err != nil {
				return 0, err
			}
			var one int
			if err := br.QueryRow().Scan(&one); err != nil {
				return 0, err
			}
			return len(gs) + one, nil
		},
		"in a nested transaction": func(ctx context.Context, tx pgx.Tx) (n int, err error) {
			nested, err := tx.Begin(ctx)
			if err != nil {
				return 0, err
			}
			if err := nested.QueryRow(ctx, `SELECT 3`).Scan(&n); err != nil {
				return 0, err
			}
			return n, nested.Commit(ctx)
		},
	}
	for name, read := range cases {
		t.Run(name, func(t *testing.T) {
			id := "evt_read_" + strings.ReplaceAll(name, " ", "_")
			out, err := b.store.Run(ctx, idempotency.Claim{EventID: id, EventType: "invoice.paid"},
				func(hctx context.Context, tx idempotency.Tx) error {
					n, err := read(hctx, idempotency.PgxTx(tx))
					if err != nil {
						return err
					}
					if n != 3 {
						return fmt.Errorf("read %d, want 3", n)
					}
					return b.add(hctx, tx, id, 1)
				})
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeProcessed, out)
			require.Equal(t, 1, b.get(t, id))
		})
	}

	// A query's error is the handler's, as pgx reports it.
	_, err := b.store.Run(ctx, idempotency.Claim{EventID: "evt_read_bad", EventType: "invoice.paid"},
		func(hctx context.Context, tx idempotency.Tx) error {
			var n int
			return idempotency.PgxTx(tx).QueryRow(hctx, `SELECT nope`).Scan(&n)
		})
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "42703", pgErr.Code)
}

// A batch left open runs its queued callbacks when the store closes it,
// after the handler returned: one that panics fails the attempt with
// ErrTxBusy, and its panic goes no further (an inbox worker's process
// crashed, outside the recover that guards the handler).
func TestPgxBatchCallbackPanicsWhenTheStoreClosesIt(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	var err error
	require.NotPanics(t, func() {
		_, err = b.store.Run(ctx, idempotency.Claim{EventID: "evt_batch_panic", EventType: "invoice.paid"},
			func(hctx context.Context, tx idempotency.Tx) error {
				batch := &pgx.Batch{}
				batch.Queue(`SELECT 1`).QueryRow(func(pgx.Row) error { panic("a callback's bug") })
				idempotency.PgxTx(tx).SendBatch(hctx, batch)
				return nil
			})
	})
	require.ErrorIs(t, err, idempotency.ErrTxBusy)
	var p *idempotency.PanicError
	require.ErrorAs(t, err, &p)
	require.Equal(t, "a callback's bug", p.Value)
}
