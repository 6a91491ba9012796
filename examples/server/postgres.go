package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgconfig"
)

// businessDDL creates the example's business tables at start, next to the
// store's own tables, by name: the accounts the invoices grant, and the
// subscription projection.
var businessDDL = []struct{ table, ddl string }{{"accounts", `CREATE TABLE IF NOT EXISTS accounts (
    id         text        PRIMARY KEY,
    credits    bigint      NOT NULL DEFAULT 0,
    receipts   integer     NOT NULL DEFAULT 0,
    plan_until timestamptz
)`}, {"subscriptions", `CREATE TABLE IF NOT EXISTS subscriptions (
    id                 text        PRIMARY KEY,
    customer           text        NOT NULL,
    status             text        NOT NULL,
    current_period_end timestamptz,
    updated_at         timestamptz NOT NULL
)`}}

// openPostgres connects, runs the store's migrations in the connection's
// current schema (the first of its search_path) and creates the business
// tables there ([createBusinessTables]). A database that is not up yet
// (refused connections, "the database system is starting up", a dropped
// connection) is tried again as [retryStartup] says, for up to wait in
// all; an error that waiting cannot fix ends it at once.
func openPostgres(ctx context.Context, dbURL string, wait time.Duration, logger *slog.Logger) (service, func(), error) {
	cfg, err := pgconfig.Parse(dbURL) // its error never quotes the URL
	if err != nil {
		return service{}, nil, fmt.Errorf("database: %w", err)
	}
	if !strings.Contains(dbURL, "pool_max_conns") {
		// pgxpool's default (4 on 2 cores) leaves deliveries queueing for
		// a connection while PostgreSQL has room; 16 lets commits share
		// WAL flushes.
		cfg.MaxConns = 16
	}
	// The pool connects on first use, so it can be made before the
	// database is up and serves every attempt.
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return service{}, nil, fmt.Errorf("database: %w", err)
	}
	var store *idempotency.PgxStore
	err = retryStartup(ctx, wait, logger, func(ctx context.Context) error {
		var schema string
		if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			return err
		}
		s, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: schema})
		if err != nil {
			return err
		}
		// All are idempotent, so an attempt cut short by a restart is
		// simply run again.
		if err := s.Migrate(ctx); err != nil {
			return err
		}
		if err := createBusinessTables(ctx, pool, schema); err != nil {
			return fmt.Errorf("creating the business tables: %w", err)
		}
		store = s
		return nil
	})
	if err != nil {
		pool.Close()
		return service{}, nil, err
	}
	return service{store: store, accounts: pgAccounts{pool: pool}, subscriptions: pgSubscriptions{pool: pool}}, pool.Close, nil
}

// createBusinessTables runs the businessDDL of the tables schema lacks, in
// one transaction. A lock per schema takes replicas started together in
// turn, as Migrate does: PostgreSQL fails all but one of concurrent CREATE
// TABLE IF NOT EXISTS of a new table with a unique violation, which is not
// retried. A table that exists is not created again: CREATE TABLE IF NOT
// EXISTS asks for CREATE on the schema before it looks for the table, and
// the service's role of the README's "Roles and privileges" has none.
func createBusinessTables(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('examples-server.tables:' || $1, 0))`, schema); err != nil {
			return err
		}
		for _, t := range businessDDL {
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT to_regclass(format('%I.%I', $1::text, $2::text)) IS NOT NULL`, schema, t.table).Scan(&exists); err != nil {
				return err
			}
			if exists {
				continue
			}
			if _, err := tx.Exec(ctx, t.ddl); err != nil {
				return err
			}
		}
		return nil
	})
}

// The pauses between start-up attempts: firstRetryDelay, doubling up to
// maxRetryDelay, each with jitter (see [jitter]).
const (
	firstRetryDelay = 100 * time.Millisecond
	maxRetryDelay   = 5 * time.Second
)

// retryStartup calls attempt until it succeeds, pausing after each failure
// that waiting may heal ([transientStartupError]) and logging it once with
// the attempt number, the error and the pause. Attempts and pauses together
// fit in wait, counted from the call: each attempt's context ends there,
// and when the next attempt would begin later, retryStartup gives up with
// the last error (the one before it, when the deadline cut the last attempt
// short). An error that waiting cannot heal is returned at once,
// and so is ctx's error when ctx ends.
func retryStartup(ctx context.Context, wait time.Duration, logger *slog.Logger, attempt func(context.Context) error) error {
	start := time.Now()
	deadline := start.Add(wait)
	attemptCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	delay := firstRetryDelay
	var prevErr error
	for n := 1; ; n++ {
		err := attempt(attemptCtx)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("database: %w", ctx.Err())
		case attemptCtx.Err() == nil && !transientStartupError(err):
			return fmt.Errorf("database: %w (not retried: waiting cannot fix this)", err)
		case attemptCtx.Err() != nil && prevErr != nil:
			// The deadline cut this attempt short; the attempt before
			// says why the database was unavailable.
			err = prevErr
		}
		prevErr = err
		pause := jitter(delay)
		if attemptCtx.Err() != nil || time.Now().Add(pause).After(deadline) {
			return fmt.Errorf("database: still unavailable after %d attempt(s) in %s, giving up (-db-wait %s): %w",
				n, time.Since(start).Round(time.Millisecond), wait, err)
		}
		logger.Warn("database not ready, retrying", "attempt", n, "error", err, "retry_in", pause)
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("database: %w", ctx.Err())
		}
		delay = min(2*delay, maxRetryDelay)
	}
}

// jitter returns a random duration in [d/2, d], so that replicas started
// together do not retry in step.
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

// transientStartupError reports whether err may go away by waiting: the
// server could not be reached or dropped the connection, or it answered
// with a condition of its own state. Anything else (a wrong password, an
// unknown role, a failed migration statement, a TLS misconfiguration) needs
// a person, and retrying it would only delay the one clear error.
func transientStartupError(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			strings.HasPrefix(pgErr.Code, "57"), // starting up, shutting down, in recovery
			strings.HasPrefix(pgErr.Code, "53"): // too many connections, out of memory or disk
			return true
		case pgErr.Code == "3D000": // invalid_catalog_name: the database does not exist
			// Retried: where PostgreSQL starts together with the service,
			// the database is often created by something that runs
			// alongside it (an init script, an init container, a
			// provisioning job). A misspelt name costs one -db-wait, and
			// the first attempt's log line already names the problem.
			return true
		}
		// Among the rest: 28P01 (wrong password), 28000 (unknown role, no
		// pg_hba.conf entry), 42501 (no privilege), 42xxx from a migration.
		return false
	}
	// No answer from the server: refused, unreachable, reset or cut off.
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		pgconn.SafeToRetry(err)
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
	acct.PlanUntil = utc(acct.PlanUntil)
	return acct, true, nil
}

// pgSubscriptions writes the subscription projection with the event
// transaction's pgx.Tx. OnCurrent holds the subscription's row lock in
// idempotency_objects until that transaction ends, so the upserts of one
// subscription commit in the order of its fetches.
type pgSubscriptions struct{ pool *pgxpool.Pool }

func (s pgSubscriptions) Put(ctx context.Context, tx idempotency.Tx, sub Subscription) error {
	_, err := idempotency.PgxTx(tx).Exec(ctx, `INSERT INTO subscriptions (id, customer, status, current_period_end, updated_at)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (id) DO UPDATE SET customer = EXCLUDED.customer, status = EXCLUDED.status,
    current_period_end = EXCLUDED.current_period_end, updated_at = EXCLUDED.updated_at`,
		sub.ID, sub.Customer, sub.Status, sub.CurrentPeriodEnd, sub.UpdatedAt)
	return err
}

func (s pgSubscriptions) Get(ctx context.Context, id string) (Subscription, bool, error) {
	var sub Subscription
	err := s.pool.QueryRow(ctx, `SELECT id, customer, status, current_period_end, updated_at FROM subscriptions WHERE id = $1`, id).
		Scan(&sub.ID, &sub.Customer, &sub.Status, &sub.CurrentPeriodEnd, &sub.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Subscription{}, false, nil
	}
	if err != nil {
		return Subscription{}, false, err
	}
	sub.CurrentPeriodEnd = utc(sub.CurrentPeriodEnd)
	sub.UpdatedAt = sub.UpdatedAt.UTC()
	return sub, true, nil
}

// utc returns t in UTC, or nil.
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
