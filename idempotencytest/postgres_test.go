package idempotencytest_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestEnvNames: the variables the documentation names are those pgtest
// reads.
func TestEnvNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, pgtest.EnvDatabaseURL, idempotencytest.EnvDatabaseURL)
	require.Equal(t, pgtest.EnvBinDir, idempotencytest.EnvPgBinDir)
}

// TestPostgresHandlerExample runs the test shown as the example of Postgres:
// a handler's SQL, delivered twice and replayed, credits once.
func TestPostgresHandlerExample(t *testing.T) {
	t.Parallel()
	testInvoiceCreditedOnce(t)
}

func TestPostgresGivesEachTestItsOwnSchema(t *testing.T) {
	t.Parallel()
	a, b := idempotencytest.Postgres(t), idempotencytest.Postgres(t)
	require.NotEqual(t, a.Schema, b.Schema)
	_, err := a.Pool.Exec(t.Context(), `CREATE TABLE accounts (id text PRIMARY KEY)`)
	require.NoError(t, err)
	_, err = b.Pool.Exec(t.Context(), `CREATE TABLE accounts (id text PRIMARY KEY)`)
	require.NoError(t, err, "the same unqualified name in another schema")
	_, err = a.Pool.Exec(t.Context(), `INSERT INTO accounts VALUES ('acct_a')`)
	require.NoError(t, err)
	var n int
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT count(*) FROM accounts`).Scan(&n))
	require.Zero(t, n, "a row of another test")

	for _, db := range []*idempotencytest.Database{a, b} {
		conn, err := pgx.Connect(t.Context(), db.URL)
		require.NoError(t, err)
		var schema string
		require.NoError(t, conn.QueryRow(t.Context(), `SELECT current_schema()`).Scan(&schema))
		require.NoError(t, conn.Close(t.Context()))
		require.Equal(t, db.Schema, schema, "URL selects the schema")
	}
}

func TestPostgresDropsTheSchemaWhenTheTestEnds(t *testing.T) {
	t.Parallel()
	var schema string
	t.Run("test", func(t *testing.T) {
		db := idempotencytest.Postgres(t)
		schema = db.Schema
		_, err := db.Pool.Exec(t.Context(), `CREATE TABLE accounts (id text PRIMARY KEY)`)
		require.NoError(t, err)
	})
	var exists bool
	require.NoError(t, idempotencytest.Postgres(t).Pool.QueryRow(t.Context(),
		`SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists))
	require.False(t, exists, "schema %s is left behind", schema)
}

// TestNewStore: the store's tables are in the test's schema, so tests on one
// server never share a ledger.
func TestNewStore(t *testing.T) {
	t.Parallel()
	db := idempotencytest.Postgres(t)
	store := db.NewStore(t, idempotency.PgxConfig{})
	out, err := store.Run(t.Context(), idempotency.Claim{EventID: "evt_1", EventType: "invoice.paid"}, nil)
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	var n int
	require.NoError(t, db.Pool.QueryRow(t.Context(),
		`SELECT count(*) FROM `+pgx.Identifier{db.Schema, "idempotency_events"}.Sanitize()).Scan(&n))
	require.Equal(t, 1, n)

	replica := db.NewStore(t, idempotency.PgxConfig{Schema: db.Schema})
	out, err = replica.Run(t.Context(), idempotency.Claim{EventID: "evt_1", EventType: "invoice.paid"}, nil)
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeDuplicate, out, "a second store on the same tables")
}

// TestPostgresWithoutMainFails runs this test binary again with a TestMain
// that does not call idempotencytest.Main: Postgres must fail with the line
// to add, not start a cluster nothing would remove.
func TestPostgresWithoutMainFails(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPostgresHandlerExample$", "-test.count=1")
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, idempotencytest.EnvDatabaseURL+"=")
	}), envNoMain+"=1")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", out)
	require.Contains(t, string(out), "func TestMain(m *testing.M) { os.Exit(idempotencytest.Main(m)) }")
	require.NotContains(t, string(out), "started throwaway PostgreSQL cluster")
}
