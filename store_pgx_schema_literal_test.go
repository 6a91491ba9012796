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
