package idempotency_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestPgxMigrateWaitsForTheAttemptsInFlight holds the README's word on a
// release's migration run while the release before serves (Migrate):
// migration 011 alters the inbox, so it waits for an attempt in flight,
// which holds the inbox until its handler returns, and every delivery
// waits behind it meanwhile, answered 503 once Config.Timeout runs out.
// Run under a short lock_timeout (the migration role's), Migrate fails
// instead, naming the lock timeout, applies nothing, and deliveries are
// answered at once; run again once the attempt has ended, it applies
// the migration.
func TestPgxMigrateWaitsForTheAttemptsInFlight(t *testing.T) {
	t.Parallel()
	for _, lockTimeout := range []string{"", "200ms"} {
		t.Run("lock_timeout="+lockTimeout, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := newPgDB(t)
			store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
			require.NoError(t, err)
			require.NoError(t, idempotency.PgxMigrateTo(ctx, store, 10))
			version := func() int {
				var n int
				require.NoError(t, db.Pool.QueryRow(ctx, `SELECT max(version) FROM idempotency_migrations`).Scan(&n))
				return n
			}

			// The deploy job's store, on connections of its own.
			url := db.URL
			if lockTimeout != "" {
				url = pgtest.WithOptions(url, "-c lock_timeout="+lockTimeout)
			}
			cfg, err := pgxpool.ParseConfig(url)
			require.NoError(t, err)
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			require.NoError(t, err)
			t.Cleanup(pool.Close)
			deployJob, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: db.Schema})
			require.NoError(t, err)

			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
			inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{})
			require.NoError(t, err)
			h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Timeout: time.Second, Logger: discardLogger()})
			require.NoError(t, err)
			answer := idempotencytest.Deliver(h, invoicePayload(t, "evt_slow", "in_slow", "acct_1"), testSecret)
			require.Equal(t, idempotency.OutcomeQueued, answer.Outcome, "%+v", answer)
			// The release before's attempt at it, its handler waiting on
			// a downstream: its transaction holds the event's row.
			attempt, err := db.Pool.Begin(ctx)
			require.NoError(t, err)
			defer rollbackTx(attempt)
			_, err = attempt.Exec(ctx, `SELECT 1 FROM idempotency_inbox WHERE event_id = 'evt_slow' FOR UPDATE`)
			require.NoError(t, err)

			migrated := make(chan error, 1)
			go func() { migrated <- deployJob.Migrate(context.Background()) }()
			if lockTimeout == "" {
				// The migration's ALTER TABLE waits for the attempt.
				require.Eventually(t, func() bool {
					var waiting bool
					require.NoError(t, db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
WHERE NOT l.granted AND l.mode = 'AccessExclusiveLock' AND c.relname = 'idempotency_inbox' AND c.relnamespace = $1::regnamespace)`, quoteIdent(db.Schema)).Scan(&waiting))
					return waiting
				}, time.Minute, 10*time.Millisecond)
				answer = idempotencytest.Deliver(h, invoicePayload(t, "evt_during", "in_during", "acct_1"), testSecret)
				require.Equal(t, http.StatusServiceUnavailable, answer.Status, "the delivery waits behind the migration: %+v", answer)
				require.NoError(t, attempt.Commit(ctx))
				require.NoError(t, <-migrated)
				require.Equal(t, 13, version(), "011 to 013 applied")
				return
			}
			err = <-migrated
			require.ErrorContains(t, err, "migration 011_inbox_redrives")
			require.ErrorContains(t, err, "lock timeout")
			require.Equal(t, 10, version(), "nothing applied")
			answer = idempotencytest.Deliver(h, invoicePayload(t, "evt_during", "in_during", "acct_1"), testSecret)
			require.Equal(t, idempotency.OutcomeQueued, answer.Outcome, "nothing waits: %+v", answer)
			require.NoError(t, attempt.Commit(ctx))
			require.NoError(t, deployJob.Migrate(ctx), "run again once the attempt has ended")
			require.Equal(t, 13, version(), "011 to 013 applied")
		})
	}
}
