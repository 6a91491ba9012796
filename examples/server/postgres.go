package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed-a84bb619/idempotency"
)

// accountsDDL is the example's business table, created at start next to the
// store's own tables.
const accountsDDL = `CREATE TABLE IF NOT EXISTS accounts (
    id         text        PRIMARY KEY,
    credits    bigint      NOT NULL DEFAULT 0,
    receipts   integer     NOT NULL DEFAULT 0,
    plan_until timestamptz
)`

// openPostgres connects, runs the store's migrations in the connection's
// current schema (the first of its search_path) and creates the accounts
// table there.
func openPostgres(ctx context.Context, dbURL string) (idempotency.Store, accounts, func(), error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("database: %w", err)
	}
	if !strings.Contains(dbURL, "pool_max_conns") {
		// pgxpool's default (4 on 2 cores) leaves deliveries queueing for
		// a connection while PostgreSQL has room; 16 lets commits share
		// WAL flushes.
		cfg.MaxConns = 16
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("database: %w", err)
	}
	fail := func(err error) (idempotency.Store, accounts, func(), error) {
		pool.Close()
		return nil, nil, nil, err
	}
	var schema string
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return fail(fmt.Errorf("database: %w", err))
	}
	store, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: schema})
	if err != nil {
		return fail(err)
	}
	if err := store.Migrate(ctx); err != nil {
		return fail(err)
	}
	if _, err := pool.Exec(ctx, accountsDDL); err != nil {
		return fail(fmt.Errorf("creating accounts: %w", err))
	}
	return store, pgAccounts{pool: pool}, pool.Close, nil
}

// pgAccounts writes accounts with the event transaction's pgx.Tx.
type pgAccounts struct{ pool *pgxpool.Pool }

func (a pgAccounts) Grant(ctx context.Context, tx idempotency.Tx, id string, credits int64, until time.Time) error {
	var planUntil *time.Time
	if !until.IsZero() {
		planUntil = &until
	}
	// Most grants find the account: a plain UPDATE is cheaper for
	// PostgreSQL than an upsert, which is the fallback for a new account.
	ptx := idempotency.PgxTx(tx)
	tag, err := ptx.Exec(ctx, `UPDATE accounts SET credits = credits + $2, receipts = receipts + 1,
    plan_until = GREATEST(plan_until, $3) WHERE id = $1`, id, credits, planUntil)
	if err != nil || tag.RowsAffected() == 1 {
		return err
	}
	_, err = ptx.Exec(ctx, `INSERT INTO accounts (id, credits, receipts, plan_until) VALUES ($1, $2, 1, $3)
ON CONFLICT (id) DO UPDATE SET credits = accounts.credits + EXCLUDED.credits,
    receipts = accounts.receipts + 1,
    plan_until = GREATEST(accounts.plan_until, EXCLUDED.plan_until)`, id, credits, planUntil)
	return err
}

func (a pgAccounts) Get(ctx context.Context, id string) (Account, bool, error) {
	var acct Account
	err := a.pool.QueryRow(ctx, `SELECT id, credits, receipts, plan_until FROM accounts WHERE id = $1`, id).
		Scan(&acct.ID, &acct.Credits, &acct.Receipts, &acct.PlanUntil)
	if errors.Is(err, pgx.ErrNoRows) {
		return Account{}, false, nil
	}
	if err != nil {
		return Account{}, false, err
	}
	if acct.PlanUntil != nil {
		u := acct.PlanUntil.UTC()
		acct.PlanUntil = &u
	}
	return acct, true, nil
}
