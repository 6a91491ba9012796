package idempotencytest_test

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// envExternalChild selects what TestPostgresExternalChild does in a child
// test binary: "die" (take a schema, then exit at once, as a binary killed
// by -timeout, a panic in another test or SIGKILL does) or "live" (take a
// schema and end normally).
const envExternalChild = "IDEMPOTENCYTEST_TEST_EXTERNAL_CHILD"

func TestPostgresExternalChild(t *testing.T) {
	mode := os.Getenv(envExternalChild)
	if mode == "" {
		t.Skip("run by TestPostgresExternalSchemasOfADeadBinaryAreDropped in a child test binary")
	}
	db := idempotencytest.Postgres(t)
	fmt.Printf("SCHEMA=%s\n", db.Schema)
	if mode == "die" {
		os.Exit(3) // no cleanup runs
	}
}

// TestPostgresExternalSchemasOfADeadBinaryAreDropped: with
// IDEMPOTENCY_TEST_DATABASE_URL set, each test's schema is dropped when
// the test ends. A test binary that dies first (-timeout, a panic in a
// parallel test, SIGKILL, os.Exit) runs no cleanup, and nothing removed
// its schemas from the user's server: they piled up there, run after run.
// The next binary on that server must drop them, and nothing else.
func TestPostgresExternalSchemasOfADeadBinaryAreDropped(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	t.Parallel()
	server := idempotencytest.Postgres(t) // the "external" server, and a schema a live test owns
	_, err := server.Pool.Exec(t.Context(), `CREATE TABLE kept (id int)`)
	require.NoError(t, err)

	run := func(mode string) string {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestPostgresExternalChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), idempotencytest.EnvDatabaseURL+"="+server.URL, envExternalChild+"="+mode)
		out, err := cmd.CombinedOutput()
		if mode == "die" {
			require.Error(t, err, "%s", out)
		} else {
			require.NoError(t, err, "%s", out)
		}
		m := regexp.MustCompile(`SCHEMA=(\S+)`).FindSubmatch(out)
		require.NotNil(t, m, "%s", out)
		return string(m[1])
	}
	exists := func(schema string) bool {
		var ok bool
		require.NoError(t, server.Pool.QueryRow(t.Context(),
			`SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&ok))
		return ok
	}

	dead := run("die")
	require.True(t, exists(dead), "the dead binary's schema is there until another binary starts")
	live := run("live")
	require.False(t, exists(live), "a test's schema is dropped when it ends")
	require.False(t, exists(dead), "the schema of a test binary that died is left on the server")
	require.True(t, exists(server.Schema), "another schema of the server was dropped")
	_, err = server.Pool.Exec(t.Context(), `INSERT INTO kept VALUES (1)`)
	require.NoError(t, err, "the live test's table")
}
