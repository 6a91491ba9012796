package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestPgxStoreRefusesSchemaWithWhiteSpace: the schema name is quoted, so
// "billing\n" (an env file's newline) or " billing" is another schema than
// "billing", with a ledger of its own. A replica configured so applied
// again every event its peers had applied: Stripe's copies, a redelivery,
// a Recover, each credited twice. NewPgxStore refuses the name, as
// NewHandler refuses a secret with white space. And a newline ended the
// SQL comment of a migration that names the schema ("-- {{schema}} is
// replaced by ..."), so that the rest of the name ran as SQL in Migrate,
// where the name is documented as "quoted as an identifier, never
// interpolated raw".
func TestPgxStoreRefusesSchemaWithWhiteSpace(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	good, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, good.Migrate(t.Context()))
	out, err := good.Run(t.Context(), idempotency.Claim{EventID: "evt_ws", EventType: "invoice.paid"}, nil)
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)

	injected := db.Schema + ".i"
	for _, schema := range []string{"x\nCREATE TABLE IF NOT EXISTS " + injected + "();--", db.Schema + "\n", " " + db.Schema, db.Schema + "\t"} {
		t.Cleanup(func() {
			_, _ = db.Pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+quoteIdent(schema)+` CASCADE`)
		})
		store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: schema})
		if err == nil {
			err := store.Migrate(t.Context())
			var ran bool
			require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT to_regclass($1) IS NOT NULL`, injected).Scan(&ran))
			if ran {
				t.Fatalf("NewPgxStore accepted the schema %q, and Migrate ran the SQL in its name (created %s): %v", schema, injected, err)
			}
			require.NoError(t, err)
			out, err := store.Run(t.Context(), idempotency.Claim{EventID: "evt_ws", EventType: "invoice.paid"}, nil)
			require.NoError(t, err)
			t.Fatalf("NewPgxStore accepted the schema %q; the event its peer on %q processed: %s", schema, db.Schema, out)
		}
		require.ErrorContains(t, err, "PgxConfig.Schema")
		require.ErrorContains(t, err, "white space or a control character")
	}
}
