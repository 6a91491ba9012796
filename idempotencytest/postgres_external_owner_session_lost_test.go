package idempotencytest_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

const envHoldChild = "IDEMPOTENCYTEST_TEST_HOLD_CHILD"

// TestPostgresExternalHoldChild, in a child binary: takes a schema with a
// table, says so, waits for its stdin to close, then uses the table.
func TestPostgresExternalHoldChild(t *testing.T) {
	if os.Getenv(envHoldChild) == "" {
		t.Skip("run by TestPostgresExternalSchemaOfALiveBinaryKept in a child test binary")
	}
	db := idempotencytest.Postgres(t)
	_, err := db.Pool.Exec(t.Context(), `CREATE TABLE held (id int)`)
	require.NoError(t, err)
	fmt.Printf("SCHEMA=%s\n", db.Schema)
	_, _ = io.Copy(io.Discard, os.Stdin)
	_, err = db.Pool.Exec(t.Context(), `INSERT INTO held VALUES (1)`)
	require.NoError(t, err, "the running test's table")
}

// TestPostgresExternalSchemaOfALiveBinaryKept: on an external server,
// a binary whose sessions the server ended (a restart, an operator's
// pg_terminate_backend, idle_session_timeout: its advisory-lock session
// sits idle all run long) is still running its tests; the pools connect
// again at their next query. The next binary to start must not take
// that binary's schemas for a dead one's and drop them under its tests.
func TestPostgresExternalSchemaOfALiveBinaryKept(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	server := idempotencytest.Postgres(t)
	ctx := t.Context()
	var before []int32
	rows, err := server.Pool.Query(ctx, `SELECT pid FROM pg_stat_activity`)
	require.NoError(t, err)
	for rows.Next() {
		var pid int32
		require.NoError(t, rows.Scan(&pid))
		before = append(before, pid)
	}
	require.NoError(t, rows.Err())

	hold := exec.Command(os.Args[0], "-test.run=^TestPostgresExternalHoldChild$", "-test.count=1")
	hold.Env = append(os.Environ(), idempotencytest.EnvDatabaseURL+"="+server.URL, envHoldChild+"=1")
	stdin, err := hold.StdinPipe()
	require.NoError(t, err)
	stdout, err := hold.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, hold.Start())
	var out []string
	var schema string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		out = append(out, sc.Text())
		if m := regexp.MustCompile(`^SCHEMA=(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			schema = m[1]
			break
		}
	}
	require.NotEmpty(t, schema, "%v", out)
	done := make(chan string, 1)
	go func() {
		rest, _ := io.ReadAll(stdout)
		done <- string(rest)
	}()

	// The server ends the child's sessions (and only those).
	var ended int
	require.NoError(t, server.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000))
FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> ALL ($1) AND pid <> pg_backend_pid()`, before).Scan(&ended))
	require.Positive(t, ended)

	// Another binary starts on the server.
	other := exec.Command(os.Args[0], "-test.run=^TestPostgresExternalChild$", "-test.count=1")
	other.Env = append(os.Environ(), idempotencytest.EnvDatabaseURL+"="+server.URL, envExternalChild+"=live")
	o, err := other.CombinedOutput()
	require.NoError(t, err, "%s", o)

	var exists bool
	require.NoError(t, server.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists))
	require.NoError(t, stdin.Close())
	rest := <-done
	err = hold.Wait()
	require.True(t, exists, "the schema of a binary still running was dropped")
	require.NoError(t, err, "%s", rest)
}
