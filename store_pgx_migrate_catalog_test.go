package idempotency_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// freshCatalog is pgxCatalog of a schema a fresh Migrate made: what a
// migrated one must equal.
func freshCatalog(t *testing.T) string {
	t.Helper()
	fresh := newPgDB(t)
	store, err := idempotency.NewPgxStore(fresh.Pool, idempotency.PgxConfig{Schema: fresh.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(t.Context()))
	return pgxCatalog(t, fresh.Pool, fresh.Schema)
}

// pgxCatalog describes what schema holds, one line per relation, column,
// constraint, index (and whether it is valid), sequence and extended
// statistics object, sorted, with
// the schema's name written {{schema}}: columns with their type,
// nullability, default, collation and compression; constraints and
// indexes with their definitions.
func pgxCatalog(t *testing.T, db *pgxpool.Pool, schema string) string {
	t.Helper()
	rows, err := db.Query(t.Context(), `
SELECT 'relation ' || c.relname || ' kind=' || c.relkind::text
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1
UNION ALL
SELECT 'column ' || c.relname || '.' || a.attname || ' #' || a.attnum || ' ' || format_type(a.atttypid, a.atttypmod)
    || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
    || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '')
    || coalesce(' collate ' || co.collname, '')
    || coalesce(' compression ' || nullif(to_jsonb(a) ->> 'attcompression', ''), '') -- PostgreSQL 14 and later
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
LEFT JOIN pg_collation co ON co.oid = a.attcollation AND a.attcollation <> 0
WHERE n.nspname = $1 AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
UNION ALL
SELECT 'constraint ' || c.relname || '.' || k.conname || ' ' || pg_get_constraintdef(k.oid)
FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1
UNION ALL
SELECT 'index ' || pg_get_indexdef(i.indexrelid) || CASE WHEN i.indisvalid THEN '' ELSE ' INVALID' END
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1
UNION ALL
SELECT 'sequence ' || sequencename || ' ' || data_type::text || ' start ' || start_value || ' increment ' || increment_by
    || ' min ' || min_value || ' max ' || max_value || ' cache ' || cache_size || CASE WHEN cycle THEN ' cycle' ELSE '' END
FROM pg_sequences WHERE schemaname = $1
UNION ALL
SELECT 'statistics ' || pg_get_statisticsobjdef(s.oid)
FROM pg_statistic_ext s JOIN pg_namespace n ON n.oid = s.stxnamespace WHERE n.nspname = $1
ORDER BY 1`, schema)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	out := strings.Join(lines, "\n") + "\n"
	out = strings.ReplaceAll(out, quoteIdent(schema), "{{schema}}")
	return strings.ReplaceAll(out, schema, "{{schema}}")
}

// pgxRow is a row written by the SQL of one migration's schema, as it
// read back then (to_jsonb).
type pgxRow struct {
	table, json string
}

// A schema migrated one version at a time from 001, with rows written by
// the SQL of each version at its step, ends with exactly the schema a
// fresh Migrate creates, compared on pg_catalog (relations, columns with
// their types, defaults, collations and compression, constraints, indexes
// with their definitions, the sequence, the extended statistics), with
// every row it held unchanged
// and the ledger of versions of a fresh schema. That schema is
// testdata/pgx_schema.txt: a constraint, an index or a default lost from
// a migration shows there.
func TestPgxMigrateOneVersionAtATimeEndsAsFresh(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	files, err := filepath.Glob("migrations/*.up.sql")
	require.NoError(t, err)
	golden, err := os.ReadFile("testdata/pgx_schema.txt")
	require.NoError(t, err)

	fresh := newPgDB(t)
	freshStore, err := idempotency.NewPgxStore(fresh.Pool, idempotency.PgxConfig{Schema: fresh.Schema})
	require.NoError(t, err)
	require.NoError(t, freshStore.Migrate(ctx))

	db := newPgDB(t)
	_, err = db.Pool.Exec(ctx, `DROP SCHEMA `+quoteIdent(db.Schema)+` CASCADE`)
	require.NoError(t, err)
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	q := quoteIdent(db.Schema)
	at := time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)
	// The rows each version's SQL writes, with its columns only.
	writes := map[int][]string{
		1: {
			`INSERT INTO {{schema}}.idempotency_events AS r (event_id, event_type, object_id, outcome, skip_reason, livemode, account, received_at, processed_at)
VALUES ('evt_v1', 'invoice.paid', 'in_1', 'skipped', 'why', true, 'acct_1', $1, $1) RETURNING to_jsonb(r)`,
			`INSERT INTO {{schema}}.idempotency_guards AS r (scope, key, event_id, claimed_at) VALUES ('action:grant', 'in_1', 'evt_v1', $1) RETURNING to_jsonb(r)`,
		},
		2: {
			`INSERT INTO {{schema}}.idempotency_inbox AS r (event_id, event_type, object_id, account, livemode, api_version, created, payload, state, attempt, last_error, received_at, attempted_at, next_attempt_at, finished_at, lease_until)
VALUES ('evt_v2_pending', 'invoice.paid', 'in_2', 'acct_1', false, '2025-01-01', $1, '\x7b7d', 'pending', 0, '', $1, NULL, $1, NULL, NULL),
       ('evt_v2_dead', 'invoice.paid', 'in_2', 'acct_1', true, '2025-01-01', $1, '\x7b7d', 'dead_letter', 5, 'boom', $1, $1, NULL, $1, NULL)
RETURNING to_jsonb(r)`,
		},
		3: {
			`INSERT INTO {{schema}}.idempotency_inbox AS r (event_id, event_type, created, payload, state, received_at, attempted_at, lease_until)
VALUES ('evt_v3_processing', 'invoice.paid', $1, convert_to(repeat('{"a":1}', 4000), 'UTF8'), 'processing', $1, $1, $1) RETURNING to_jsonb(r)`,
		},
		4: {
			`INSERT INTO {{schema}}.idempotency_inbox AS r (event_id, event_type, created, payload, state, received_at, finished_at, kind)
VALUES ('task:grant:in_1', 'task:grant', $1, '\x7b7d', 'processed', $1, $1, 'task') RETURNING to_jsonb(r)`,
		},
		5: {
			`INSERT INTO {{schema}}.idempotency_inbox AS r (event_id, event_type, created, payload, state, received_at, next_attempt_at)
VALUES ('evt_v5_failed', 'invoice.paid', $1, '\x7b7d', 'failed', $1, $1) RETURNING to_jsonb(r)`,
			`INSERT INTO {{schema}}.idempotency_objects AS r (scope, object_id, fetch_seq, fetched_at) VALUES ('current:invoice', 'in_5', nextval('{{schema}}.idempotency_seq'), $1) RETURNING to_jsonb(r)`,
			`INSERT INTO {{schema}}.idempotency_order AS r (scope, key, created, event_id) VALUES ('order:invoice', 'in_5', $1, 'evt_v5') RETURNING to_jsonb(r)`,
		},
		6: {
			`INSERT INTO {{schema}}.idempotency_recovery AS r (name, since, types, only_undelivered, last_event_id, last_created, updated_at)
VALUES ('nightly', $1, 'invoice.paid', true, 'evt_v6', $1, $1) RETURNING to_jsonb(r)`,
		},
		7: {
			`INSERT INTO {{schema}}.idempotency_events AS r (event_id, event_type, outcome, received_at) VALUES ('evt_v7', 'invoice.paid', 'processed', $1) RETURNING to_jsonb(r)`,
			`INSERT INTO {{schema}}.idempotency_guards AS r (scope, key, event_id, claimed_at) VALUES ('action:grant', 'in_7', 'evt_v7', $1) RETURNING to_jsonb(r)`,
		},
		8: {
			`INSERT INTO {{schema}}.idempotency_inbox AS r (event_id, event_type, created, payload, state, received_at, next_attempt_at, trace)
VALUES ('evt_v8', 'invoice.paid', $1, '\x7b7d', 'pending', $1, $1, '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01') RETURNING to_jsonb(r)`,
		},
		9: { // a finished task with its arguments, and one whose arguments were cleared
			`INSERT INTO {{schema}}.idempotency_inbox AS r (event_id, event_type, created, payload, state, received_at, finished_at, kind)
VALUES ('task:grant:in_9', 'task:grant', $1, '\x7b7d', 'processed', $1, $1, 'task'),
       ('task:grant:in_9b', 'task:grant', $1, '', 'skipped', $1, $1, 'task') RETURNING to_jsonb(r)`,
		},
		10: {
			`INSERT INTO {{schema}}.idempotency_recovery AS r (name, since, account, types, only_undelivered, last_event_id, last_created, updated_at)
VALUES ('nightly:acct_10', $1, 'acct_10', '', false, 'evt_v10', $1, $1) RETURNING to_jsonb(r)`,
		},
		11: {
			`INSERT INTO {{schema}}.idempotency_inbox AS r (event_id, event_type, created, payload, state, received_at, finished_at, redrives, redriven_at)
VALUES ('evt_v11', 'invoice.paid', $1, '\x7b7d', 'dead_letter', $1, $1, 2, $1) RETURNING to_jsonb(r)`,
		},
		12: { // rows of an object, found on its indexes
			`INSERT INTO {{schema}}.idempotency_events AS r (event_id, event_type, object_id, outcome, received_at) VALUES ('evt_v12', 'invoice.paid', 'in_12', 'processed', $1) RETURNING to_jsonb(r)`,
			`INSERT INTO {{schema}}.idempotency_inbox AS r (event_id, event_type, object_id, created, payload, state, received_at, finished_at)
VALUES ('evt_v12', 'invoice.paid', 'in_12', $1, '\x7b7d', 'processed', $1, $1) RETURNING to_jsonb(r)`,
		},
		13: { // statistics of kind and state together: an ignored event, which no task can be
			`INSERT INTO {{schema}}.idempotency_inbox AS r (event_id, event_type, created, payload, state, received_at, finished_at)
VALUES ('evt_v13', 'invoice.paid', $1, '\x7b7d', 'ignored', $1, $1) RETURNING to_jsonb(r)`,
		},
	}
	require.Len(t, writes, len(files), "rows for each migration")
	var written []pgxRow
	for v := 1; v <= len(files); v++ {
		require.NoError(t, idempotency.PgxMigrateTo(ctx, store, v), "step %03d", v)
		var versions []int
		rows, err := db.Pool.Query(ctx, `SELECT version FROM `+q+`.idempotency_migrations ORDER BY version`)
		require.NoError(t, err)
		versions, err = pgx.CollectRows(rows, pgx.RowTo[int])
		require.NoError(t, err)
		require.Len(t, versions, v, "step %03d", v)
		require.Equal(t, v, versions[v-1])
		for _, sql := range writes[v] {
			sql = strings.ReplaceAll(sql, "{{schema}}", q)
			rows, err := db.Pool.Query(ctx, sql, at)
			require.NoError(t, err, "step %03d: %s", v, sql)
			got, err := pgx.CollectRows(rows, pgx.RowTo[string])
			require.NoError(t, err, "step %03d: %s", v, sql)
			table, _, _ := strings.Cut(strings.TrimPrefix(sql, `INSERT INTO `+q+`.`), ` `)
			for _, j := range got {
				written = append(written, pgxRow{table, j})
			}
		}
	}
	require.NoError(t, store.Migrate(ctx), "nothing left to apply")

	catalog := pgxCatalog(t, db.Pool, db.Schema)
	require.Equal(t, pgxCatalog(t, fresh.Pool, fresh.Schema), catalog, "migrated one version at a time, the schema is a fresh one's")
	// The payload's compression depends on the server (lz4 where it has
	// it, TestPgxInboxPayloadCompression): the schema kept is the rest.
	require.Equal(t, string(golden), regexp.MustCompile(` compression [a-z]+`).ReplaceAllString(catalog, ""))
	var ledger, freshLedger string
	const ledgerSQL = `SELECT string_agg(version || ' ' || name, ', ' ORDER BY version) FROM %s.idempotency_migrations`
	require.NoError(t, db.Pool.QueryRow(ctx, fmt.Sprintf(ledgerSQL, q)).Scan(&ledger))
	require.NoError(t, fresh.Pool.QueryRow(ctx, fmt.Sprintf(ledgerSQL, quoteIdent(fresh.Schema))).Scan(&freshLedger))
	require.Equal(t, freshLedger, ledger)

	// Every row written on the way reads back as it was written (the
	// columns added since hold their defaults), and no other row is there.
	count := map[string]int{}
	for _, r := range written {
		count[r.table]++
		var n int
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM `+q+`.`+r.table+` AS r WHERE to_jsonb(r) @> $1::jsonb`, r.json).Scan(&n))
		require.Equal(t, 1, n, "%s row %s", r.table, r.json)
	}
	for table, want := range count {
		var n int
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM `+q+`.`+table).Scan(&n))
		require.Equal(t, want, n, table)
	}
	var kinds, traces string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT string_agg(DISTINCT kind, ','), string_agg(DISTINCT trace, ',') FROM `+q+`.idempotency_inbox WHERE event_id LIKE 'evt_%'`).Scan(&kinds, &traces))
	require.Equal(t, "event", kinds, "events stored before 004 are events")
	require.Equal(t, ",00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", traces, "events stored before 008 have no trace")
	for name, want := range map[string]string{"nightly": "", "nightly:acct_10": "acct_10"} {
		account, found, err := idempotency.RecoveryCheckpointAccount(ctx, store, name)
		require.NoError(t, err)
		require.True(t, found, name)
		require.Equal(t, want, account, "a checkpoint made before 010 lists the platform's own events")
	}
	in, err := idempotency.NewInbox(store, idempotency.NewHandlers(), idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	recs, err := in.List(ctx, idempotency.InboxFilter{Kind: idempotency.KindEvent})
	require.NoError(t, err)
	require.Len(t, recs, 8)
	st, err := in.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, st.Counts[idempotency.InboxIgnored], "the ignored event of 013, counted")
	require.Nil(t, st.Estimated)
	// Rows stored before 012 are in its indexes.
	ofObject, err := in.List(ctx, idempotency.InboxFilter{ObjectID: "in_2"})
	require.NoError(t, err)
	require.Len(t, ofObject, 2, "the inbox rows of in_2, stored at 002")
	claims, err := store.ListEvents(ctx, idempotency.EventFilter{ObjectID: "in_12", EventType: "invoice.paid"})
	require.NoError(t, err)
	require.Len(t, claims, 1, "the claim of in_12")
	for _, r := range recs {
		if r.EventID == "evt_v11" {
			require.Equal(t, 2, r.Redrives)
			require.Equal(t, at, r.RedrivenAt.UTC())
			continue
		}
		require.Zero(t, r.Redrives, "%s, stored before 011, was never redriven", r.EventID)
		require.True(t, r.RedrivenAt.IsZero(), "%s, stored before 011: %s", r.EventID, r.RedrivenAt)
	}
}
