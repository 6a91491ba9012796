package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// The schema's name must not reach the body of a dollar-quoted DO block
// (migration 003) as text: a name with the block's tag in it ended the
// body there, and the rest of the name ran as SQL.
func TestPgxSchemaWithDollarQuoteTag(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	schema := db.Schema + `_a$lz4$b`
	t.Cleanup(func() {
		_, _ = db.Pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+quoteIdent(schema)+` CASCADE`)
	})
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(t.Context()))
	require.NoError(t, store.Migrate(t.Context()))
	// Migration 003 still set lz4 on the payload column, where the server
	// has it.
	var version int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT current_setting('server_version_num')::int`).Scan(&version))
	if version >= 140000 { // before 14, pglz is the only method
		want := "l"
		if _, err := db.Pool.Exec(t.Context(), `CREATE TEMPORARY TABLE lz4_probe (b bytea COMPRESSION lz4)`); err != nil {
			want = "" // built without lz4
		}
		var got string
		require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT attcompression::text FROM pg_attribute
WHERE attrelid = to_regclass($1) AND attname = 'payload'`, quoteIdent(schema)+`.idempotency_inbox`).Scan(&got))
		require.Equal(t, want, got)
	}
	out, err := store.Run(t.Context(), idempotency.Claim{EventID: "evt_dollar", EventType: "invoice.paid"}, nil)
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
}
