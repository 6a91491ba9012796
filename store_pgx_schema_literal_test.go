package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// The schema's name reaches SQL inside a string literal too (the
// sequence's nextval('...') of migration 005 and CheckOrder). A backslash
// in it must not end or bend that literal on a server with
// standard_conforming_strings off, where a backslash escapes.
func TestPgxSchemaWithBackslashOnNonConformingStrings(t *testing.T) {
	t.Parallel()
	db := pgtest.NewWithConfig(t, func(c *pgxpool.Config) {
		c.ConnConfig.RuntimeParams["standard_conforming_strings"] = "off"
	})
	for _, schema := range []string{db.Schema + `_back\slash`, db.Schema + `_q\'uote`} {
		t.Cleanup(func() {
			_, _ = db.Pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+quoteIdent(schema)+` CASCADE`)
		})
		store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: schema})
		require.NoError(t, err)
		require.NoError(t, store.Migrate(t.Context()), schema)
		out, err := store.Run(t.Context(), idempotency.Claim{EventID: "evt_bs", EventType: "invoice.paid"}, func(ctx context.Context, tx idempotency.Tx) error {
			_, err := idempotency.CheckOrder(ctx, tx, "customer", "cus_bs", time.Unix(1756742400, 0))
			return err
		})
		require.NoError(t, err, schema)
		require.Equal(t, idempotency.OutcomeProcessed, out)
	}
}

// A schema whose name holds the migrations' placeholder "{{schema}}" is
// migrated under that very name: the placeholder the name brings into the
// SQL is not replaced again, raw, inside the string literal of migration
// 005 (with a quote after it, that would end the literal and run what
// follows as SQL).
func TestPgxSchemaNamedLikeThePlaceholder(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := t.Context()
	_, err := db.Pool.Exec(ctx, `CREATE TABLE `+quoteIdent(db.Schema)+`.canary (id int)`)
	require.NoError(t, err)
	schema := `{{schema}}'::text);DROP TABLE ` + db.Schema + `.canary;--`
	t.Cleanup(func() {
		_, _ = db.Pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+quoteIdent(schema)+` CASCADE`)
	})
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(ctx))

	var canary bool
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, quoteIdent(db.Schema)+`.canary`).Scan(&canary))
	require.True(t, canary, "the name's text ran as SQL")
	var seqDefault string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d
		JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
		WHERE d.adrelid = ($1 || '.idempotency_inbox')::regclass AND a.attname = 'seq'`, quoteIdent(schema)).Scan(&seqDefault))
	require.Contains(t, seqDefault, "idempotency_seq", "the inbox's seq default names the schema's own sequence")

	out, err := store.Run(ctx, idempotency.Claim{EventID: "evt_ph", EventType: "invoice.paid"}, func(ctx context.Context, tx idempotency.Tx) error {
		_, err := idempotency.CheckOrder(ctx, tx, "customer", "cus_ph", time.Unix(1756742400, 0))
		return err
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
}
