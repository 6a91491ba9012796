package idempotency_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// applyMigrationsUpTo applies the migrations up to version last to schema
// by hand, as the release that shipped them would have, with their
// version rows.
func applyMigrationsUpTo(t *testing.T, b *pgBackend, schema string, last int) {
	t.Helper()
	ctx := t.Context()
	files, err := filepath.Glob("migrations/*.up.sql")
	require.NoError(t, err)
	sort.Strings(files)
	q := quoteIdent(schema)
	tx, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(context.Background())
	for _, stmt := range []string{
		`CREATE SCHEMA IF NOT EXISTS ` + q,
		`CREATE TABLE ` + q + `.idempotency_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
	} {
		_, err := tx.Exec(ctx, stmt)
		require.NoError(t, err)
	}
	_, err = tx.Exec(ctx, `SELECT set_config('idempotency.migrate_schema', $1, true)`, schema)
	require.NoError(t, err)
	for _, f := range files {
		num, name, _ := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".up.sql"), "_")
		v, err := strconv.Atoi(num)
		require.NoError(t, err)
		if v > last {
			break
		}
		body, err := os.ReadFile(f)
		require.NoError(t, err)
		sql := strings.ReplaceAll(string(body), "{{schema_literal}}", strings.ReplaceAll(q, "'", "''"))
		_, err = tx.Exec(ctx, strings.ReplaceAll(sql, "{{schema}}", q))
		require.NoError(t, err, f)
		_, err = tx.Exec(ctx, `INSERT INTO `+q+`.idempotency_migrations (version, name) VALUES ($1, $2)`, v, name)
		require.NoError(t, err)
	}
	require.NoError(t, tx.Commit(ctx))
}

// A schema migrated by an older release, holding rows written the old
// way (a claim, a guard, inbox events pending and finished), is brought
// up to date by Migrate: the rows read back unchanged, the claim and the
// guard still hold, and the pending event is applied once.
func TestPgxMigrateKeepsRowsOfEveryOlderSchema(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("migrations/*.up.sql")
	require.NoError(t, err)
	for last := 1; last < len(files); last++ {
		for _, iso := range []string{"read committed", "repeatable read", "serializable"} {
			t.Run(fmt.Sprintf("from-%03d/%s", last, iso), func(t *testing.T) {
				t.Parallel()
				migrateOlderSchema(t, last, iso)
			})
		}
	}
}

// migrateOlderSchema migrates, from three replicas at once whose
// sessions default to isolation iso, a schema an older release migrated
// up to version last, and checks the rows it held.
func migrateOlderSchema(t *testing.T, last int, iso string) {
	ctx := t.Context()
	db := pgtest.NewWithConfig(t, func(c *pgxpool.Config) {
		c.MaxConns = 24
		c.ConnConfig.RuntimeParams["default_transaction_isolation"] = iso
	})
	_, err := db.Pool.Exec(ctx, `DROP SCHEMA `+quoteIdent(db.Schema)+` CASCADE`)
	require.NoError(t, err)
	b := &pgBackend{db: db}
	applyMigrationsUpTo(t, b, db.Schema, last)
	q := quoteIdent(db.Schema)
	received := time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)
	_, err = db.Pool.Exec(ctx, `INSERT INTO `+q+`.idempotency_events (event_id, event_type, object_id, outcome, skip_reason, livemode, account, received_at, processed_at)
VALUES ('evt_old', 'invoice.paid', 'in_old', 'skipped', 'why', true, 'acct_old', $1, $2)`, received, received.Add(time.Second))
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `INSERT INTO `+q+`.idempotency_guards (scope, key, event_id, claimed_at) VALUES ('invoice-credit', 'in_old', 'evt_old', $1)`, received)
	require.NoError(t, err)
	if last >= 2 {
		_, err = db.Pool.Exec(ctx, `INSERT INTO `+q+`.idempotency_inbox (event_id, event_type, object_id, account, livemode, api_version, created, payload, state, attempt, received_at, next_attempt_at, finished_at)
VALUES ('evt_old_pending', 'invoice.paid', 'in_pending', 'acct_1', false, '2025-01-01', to_timestamp($1), $2, 'pending', 0, $3, $3, NULL),
       ('evt_old_done', 'invoice.paid', 'in_done', 'acct_1', false, '2025-01-01', to_timestamp($1), $4, 'processed', 1, $3, NULL, $3)`,
			pgInboxCreated, pgInboxPayload(t, "evt_old_pending", "in_pending", 0), received, pgInboxPayload(t, "evt_old_done", "in_done", 0))
		require.NoError(t, err)
	}

	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	migrateAtOnce(t, db, store, db.Schema, 3)
	b.store = store
	_, err = db.Pool.Exec(ctx, `CREATE TABLE counters (name text PRIMARY KEY, value bigint NOT NULL)`)
	require.NoError(t, err)

	ev, ok, err := store.LookupEvent(ctx, "evt_old")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, idempotency.EventRecord{EventID: "evt_old", EventType: "invoice.paid", ObjectID: "in_old", Account: "acct_old", Livemode: true,
		Outcome: idempotency.OutcomeSkipped, SkipReason: "why", ReceivedAt: received, ProcessedAt: received.Add(time.Second)}, utcEvent(ev))
	g, ok, err := store.LookupGuard(ctx, "invoice-credit", "in_old")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "evt_old", g.EventID)
	out, err := store.Run(ctx, idempotency.Claim{EventID: "evt_old", EventType: "invoice.paid"}, func(context.Context, idempotency.Tx) error { return nil })
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeDuplicate, out)
	out, err = store.Run(ctx, idempotency.Claim{EventID: "evt_new", EventType: "invoice.paid"}, func(ctx context.Context, tx idempotency.Tx) error {
		first, err := tx.Guard(ctx, "invoice-credit", "in_old")
		require.NoError(t, err)
		require.False(t, first, "the old guard holds")
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)

	if last < 2 {
		return
	}
	p := newPgInbox(t, b, idempotency.InboxConfig{})
	done := p.record(t, "evt_old_done")
	require.Equal(t, idempotency.InboxProcessed, done.State)
	require.Equal(t, idempotency.KindEvent, done.Kind)
	require.Equal(t, received, done.FinishedAt.UTC())
	require.Zero(t, done.Redrives, "stored before 011: never redriven")
	require.True(t, done.RedrivenAt.IsZero(), "stored before 011: %s", done.RedrivenAt)
	leased := p.lease(t, 1)
	require.Equal(t, "evt_old_pending", leased[0].EventID())
	idempotency.ApplyLeased(ctx, p.inbox, leased[0])
	require.Equal(t, idempotency.InboxProcessed, p.record(t, "evt_old_pending").State)
	require.Equal(t, 1, b.get(t, "in_pending"))
	var n int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM `+q+`.idempotency_inbox`).Scan(&n))
	require.Equal(t, 2, n)
}

func utcEvent(r idempotency.EventRecord) idempotency.EventRecord {
	r.ReceivedAt, r.ProcessedAt = r.ReceivedAt.UTC(), r.ProcessedAt.UTC()
	return r
}
