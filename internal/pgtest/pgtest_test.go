package pgtest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func schemaExists(t *testing.T, schema string) bool {
	t.Helper()
	var exists bool
	err := pgtest.AdminPool(t).QueryRow(context.Background(),
		"SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists)
	if err != nil {
		t.Fatalf("look up schema %s: %v", schema, err)
	}
	return exists
}

func TestParallelTestsGetTheirOwnSchemas(t *testing.T) {
	pgtest.AdminPool(t) // skips here too, not just in the subtests, without PostgreSQL
	var mu sync.Mutex
	schemas := map[string]string{} // subtest -> schema

	t.Run("group", func(t *testing.T) {
		for _, name := range []string{"a", "b"} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				db := pgtest.New(t)
				mu.Lock()
				schemas[name] = db.Schema
				mu.Unlock()

				ctx := context.Background()
				// Same table name in both tests: no clash, and each sees only its own row.
				if _, err := db.Pool.Exec(ctx, "CREATE TABLE widgets (owner text)"); err != nil {
					t.Fatal(err)
				}
				if _, err := db.Pool.Exec(ctx, "INSERT INTO widgets VALUES ($1)", name); err != nil {
					t.Fatal(err)
				}
				rows, err := db.Pool.Query(ctx, "SELECT owner FROM widgets")
				if err != nil {
					t.Fatal(err)
				}
				owners, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					t.Fatal(err)
				}
				if len(owners) != 1 || owners[0] != name {
					t.Fatalf("widgets = %q, want only %q", owners, name)
				}
				var current string
				if err := db.Pool.QueryRow(ctx, "SELECT current_schema()").Scan(&current); err != nil {
					t.Fatal(err)
				}
				if current != db.Schema {
					t.Fatalf("current_schema() = %q, want %q", current, db.Schema)
				}
			})
		}
	})

	if schemas["a"] == "" || schemas["b"] == "" || schemas["a"] == schemas["b"] {
		t.Fatalf("want two different schemas, got %v", schemas)
	}
	for _, s := range schemas {
		if !strings.HasPrefix(s, "t_") {
			t.Errorf("schema %q does not start with t_", s)
		}
		if schemaExists(t, s) {
			t.Errorf("schema %s still exists after its test ended", s)
		}
	}
}

func TestTableIsInvisibleInAnotherTestsSchema(t *testing.T) {
	ctx := context.Background()
	db1, db2 := pgtest.New(t), pgtest.New(t)

	if _, err := db1.Pool.Exec(ctx, "CREATE TABLE only_in_one (id int)"); err != nil {
		t.Fatal(err)
	}
	var reg *string
	if err := db2.Pool.QueryRow(ctx, "SELECT to_regclass('only_in_one')::text").Scan(&reg); err != nil {
		t.Fatal(err)
	}
	if reg != nil {
		t.Fatalf("table of schema %s is visible from schema %s as %s", db1.Schema, db2.Schema, *reg)
	}
	_, err := db2.Pool.Exec(ctx, "SELECT * FROM only_in_one")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42P01" {
		t.Fatalf("select from other test's table: err = %v, want undefined_table (42P01)", err)
	}
}

func TestSchemaIsDroppedAfterCleanup(t *testing.T) {
	var schema string
	t.Run("inner", func(t *testing.T) {
		db := pgtest.New(t)
		schema = db.Schema
		if _, err := db.Pool.Exec(context.Background(), "CREATE TABLE t (id int)"); err != nil {
			t.Fatal(err)
		}
		if !schemaExists(t, schema) {
			t.Fatalf("schema %s does not exist during the test", schema)
		}
	})
	if schemaExists(t, schema) {
		t.Fatalf("schema %s still exists after cleanup", schema)
	}
}

func TestURLSelectsTheSchema(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	if _, err := db.Pool.Exec(ctx, "CREATE TABLE shared_table (v text); INSERT INTO shared_table VALUES ('hello')"); err != nil {
		t.Fatal(err)
	}

	// Another pgx pool, as code under test would open it.
	pool, err := pgxpool.New(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var searchPath, v string
	if err := pool.QueryRow(ctx, "SELECT current_setting('search_path'), v FROM shared_table").Scan(&searchPath, &v); err != nil {
		t.Fatal(err)
	}
	if searchPath != db.Schema || v != "hello" {
		t.Fatalf("via URL: search_path=%q v=%q, want %q and hello", searchPath, v, db.Schema)
	}

	// A libpq client (a subprocess), if installed.
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Log("psql not on PATH; libpq check skipped")
		return
	}
	out, err := exec.Command(psql, "-X", "-A", "-t", "-c", "SELECT v FROM shared_table", db.URL).CombinedOutput()
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "hello" {
		t.Fatalf("psql output %q, want hello", got)
	}
}

func TestNewWithConfig(t *testing.T) {
	db := pgtest.NewWithConfig(t, func(c *pgxpool.Config) { c.MaxConns = 20 })
	if got := db.Pool.Config().MaxConns; got != 20 {
		t.Fatalf("MaxConns = %d, want 20", got)
	}
	var current string
	if err := db.Pool.QueryRow(context.Background(), "SELECT current_schema()").Scan(&current); err != nil {
		t.Fatal(err)
	}
	if current != db.Schema {
		t.Fatalf("current_schema() = %q, want %q", current, db.Schema)
	}
}

func TestAdminPoolUsesTheDefaultDatabase(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	admin := pgtest.AdminPool(t)
	var dbName, schema string
	if err := admin.QueryRow(ctx, "SELECT current_database(), current_schema()").Scan(&dbName, &schema); err != nil {
		t.Fatal(err)
	}
	if schema == db.Schema {
		t.Fatalf("admin pool is in the test's schema %s", schema)
	}

	// Terminating a test's backend from the admin pool.
	var pid uint32
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid = conn.Conn().PgConn().PID()
	var terminated bool
	if err := admin.QueryRow(ctx, "SELECT pg_terminate_backend($1, 10000)", pid).Scan(&terminated); err != nil {
		t.Fatal(err)
	}
	if !terminated {
		t.Fatalf("backend %d not terminated", pid)
	}
	if _, err := conn.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("query on terminated connection succeeded")
	}
	conn.Release() // the broken connection is dropped from the pool
	if _, err := db.Pool.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatalf("pool did not replace the terminated connection: %v", err)
	}
}

func TestStopThenStart(t *testing.T) {
	ctx := context.Background()
	c := pgtest.Server(t)
	db := pgtest.New(t)
	if _, err := db.Pool.Exec(ctx, "CREATE TABLE survives (id int); INSERT INTO survives VALUES (42)"); err != nil {
		t.Fatal(err)
	}

	c.Stop(t)
	if _, err := db.Pool.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("query succeeded while the server was stopped")
	}

	c.Start(t)
	var id int
	if err := db.Pool.QueryRow(ctx, "SELECT id FROM survives").Scan(&id); err != nil {
		t.Fatalf("first query on the same pool after Start: %v", err)
	}
	if id != 42 {
		t.Fatalf("id = %d, want 42", id)
	}
}

func TestKillThenStartKeepsCommittedRows(t *testing.T) {
	ctx := context.Background()
	c := pgtest.Server(t)
	db := pgtest.New(t)
	if _, err := db.Pool.Exec(ctx, "CREATE TABLE commits (id int)"); err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := range n {
		if _, err := db.Pool.Exec(ctx, "INSERT INTO commits VALUES ($1)", i); err != nil {
			t.Fatal(err)
		}
	}

	c.Kill(t) // no shutdown checkpoint: Start has to run crash recovery
	c.Start(t)

	var got int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM commits").Scan(&got); err != nil {
		t.Fatalf("first query on the same pool after Kill+Start: %v", err)
	}
	if got != n {
		t.Fatalf("%d of %d acknowledged commits survived Kill", got, n)
	}
}

func TestServerLeftStoppedIsRestartedForLaterTests(t *testing.T) {
	t.Run("leaves it stopped", func(t *testing.T) {
		pgtest.Server(t).Stop(t)
	})
	db := pgtest.New(t)
	if _, err := db.Pool.Exec(context.Background(), "SELECT 1"); err != nil {
		t.Fatalf("server not running after a test left it stopped: %v", err)
	}
}
