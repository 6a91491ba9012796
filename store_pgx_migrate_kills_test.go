package idempotency_test

import (
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// Migration 007's indexes, created beforehand with CREATE INDEX
// CONCURRENTLY and the definitions in migrations/007_retention.up.sql as
// the README advises for a large inbox, are found by Migrate, which
// builds nothing: the schema at 006 migrates, keeping the very indexes
// built (the same relations), and ends as a fresh one.
func TestPgxMigrateKeepsIndexesBuiltBeforehand(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := newPgDB(t)
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, idempotency.PgxMigrateTo(ctx, store, 6))
	q := quoteIdent(db.Schema)
	body, err := os.ReadFile("migrations/007_retention.up.sql")
	require.NoError(t, err)
	var lines []string // without its comments, which hold semicolons
	for l := range strings.SplitSeq(string(body), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			lines = append(lines, l)
		}
	}
	var names []string
	for stmt := range strings.SplitSeq(strings.Join(lines, "\n"), ";") {
		stmt = strings.TrimSpace(stmt)
		def, ok := strings.CutPrefix(stmt, "CREATE INDEX ")
		if !ok {
			continue
		}
		def = strings.TrimPrefix(def, "IF NOT EXISTS ")
		name, _, _ := strings.Cut(def, "\n")
		names = append(names, strings.TrimSpace(name))
		_, err := db.Pool.Exec(ctx, "CREATE INDEX CONCURRENTLY "+strings.ReplaceAll(def, "{{schema}}", q))
		require.NoError(t, err, def)
	}
	require.Equal(t, []string{"idempotency_inbox_finished_idx", "idempotency_guards_event_id_idx"}, names)
	oids := func() []uint32 {
		var out []uint32
		for _, n := range names {
			var oid uint32
			require.NoError(t, db.Pool.QueryRow(ctx, `SELECT to_regclass($1)::oid`, q+"."+n).Scan(&oid))
			out = append(out, oid)
		}
		return out
	}
	built := oids()
	require.NoError(t, store.Migrate(ctx))
	require.Equal(t, built, oids(), "the indexes built beforehand are kept, not built again")

	require.Equal(t, freshCatalog(t), pgxCatalog(t, db.Pool, db.Schema))
}

// Migrate, as its documentation in errors.go says, fails with
// ErrStoreUnavailable when the database cannot be reached, as Ping does:
// a replica's start tells a database still coming up from a schema it
// cannot migrate.
func TestPgxMigrateStoreUnavailable(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(t.Context(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=2")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{})
	require.NoError(t, err)
	require.ErrorIs(t, store.Migrate(t.Context()), idempotency.ErrStoreUnavailable)
}

// Migrate hands the schema's name to the migrations' DO blocks in a
// setting local to its transaction: the pooled connection it ran on
// carries nothing of it afterwards into the application's sessions.
func TestPgxMigrateLeavesNoSettingOnItsConnection(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := newPgDB(t)
	conn, err := db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	store, err := idempotency.NewPgxStore(conn.Conn(), idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(ctx))
	var setting string
	require.NoError(t, conn.QueryRow(ctx, `SELECT coalesce(current_setting('idempotency.migrate_schema', true), '')`).Scan(&setting))
	require.Empty(t, setting)
}
