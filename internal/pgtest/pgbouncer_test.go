package pgtest_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestBouncerSharesServerConnections: 24 clients in concurrent
// transactions run on at most BouncerPoolSize server backends, which carry
// the test's application_name and no search_path.
func TestBouncerSharesServerConnections(t *testing.T) {
	t.Parallel()
	db := pgtest.PgBouncer(t).New(t, func(c *pgxpool.Config) { c.MaxConns = 24 })
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, "CREATE TABLE "+pgx.Identifier{db.Schema, "widgets"}.Sanitize()+" (id int)"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	pids := map[int32]bool{}
	var wg sync.WaitGroup
	for range 24 {
		wg.Go(func() {
			err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
				var pid int32
				var app, searchPath string
				if err := tx.QueryRow(ctx, "SELECT pg_backend_pid(), current_setting('application_name'), current_setting('search_path') FROM pg_sleep(0.05)").
					Scan(&pid, &app, &searchPath); err != nil {
					return err
				}
				if app != db.Schema || strings.Contains(searchPath, db.Schema) {
					t.Errorf("server session has application_name %q, search_path %q", app, searchPath)
				}
				mu.Lock()
				pids[pid] = true
				mu.Unlock()
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if clients := db.Pool.Stat().TotalConns(); len(pids) > pgtest.BouncerPoolSize || clients <= pgtest.BouncerPoolSize {
		t.Fatalf("%d client connections ran on %d server backends; want more clients than backends, at most %d backends", clients, len(pids), pgtest.BouncerPoolSize)
	}
	t.Logf("24 transactions on %d client connections ran on %d server backends", db.Pool.Stat().TotalConns(), len(pids))
}

// TestBouncerRefusesOptions: PgBouncer 1.18 refuses the "options" startup
// parameter that DB.URL uses to set search_path.
func TestBouncerRefusesOptions(t *testing.T) {
	t.Parallel()
	db := pgtest.PgBouncer(t).New(t, nil)
	conn, err := pgx.Connect(context.Background(), db.URL+"&options=-csearch_path%3D"+db.Schema)
	if err == nil {
		conn.Close(context.Background())
		t.Skip("this PgBouncer accepts the options startup parameter")
	}
	if !strings.Contains(err.Error(), "unsupported startup parameter: options") {
		t.Fatalf("want PgBouncer's refusal of options, got %v", err)
	}
}

// TestBouncerBreaksCachedStatements shows why a BouncerDB's pool does not
// use pgx's default query mode: statements prepared under a name on one
// server connection are missing from another, or already there for another
// client. PgBouncer hands out the most recently used idle server
// connection first, which makes both deterministic.
func TestBouncerBreaksCachedStatements(t *testing.T) {
	t.Parallel()
	db := pgtest.PgBouncer(t).New(t, nil)
	ctx := context.Background()
	connect := func() *pgx.Conn {
		cfg, err := pgx.ParseConfig(db.URL)
		if err != nil {
			t.Fatal(err)
		}
		cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement // pgx's default
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		return conn
	}
	query := func(conn *pgx.Conn) error {
		var n int
		return conn.QueryRow(ctx, "SELECT $1::int", 1).Scan(&n)
	}
	a, b, holder := connect(), connect(), connect()
	if err := query(a); err != nil { // prepares stmtcache_... on server connection 1
		t.Fatal(err)
	}
	requireCode(t, query(b), "42P05") // server connection 1 again: "already exists"

	// While connection 1 is in a transaction, a's statement goes to another.
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	requireCode(t, query(a), "26000") // "does not exist"
}

func requireCode(t *testing.T, err error, code string) {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != code {
		t.Fatalf("want SQLSTATE %s, got %v", code, err)
	}
	t.Logf("pgx's default query mode through PgBouncer: %v", err)
}

// TestBouncerDBCleanup: when a test ends, its schema is dropped and the
// server connections PgBouncer held for it are closed.
func TestBouncerDBCleanup(t *testing.T) {
	t.Parallel()
	var schema string
	t.Run("use", func(t *testing.T) {
		db := pgtest.PgBouncer(t).New(t, nil)
		schema = db.Schema
		if _, err := db.Pool.Exec(context.Background(), "SELECT 1"); err != nil {
			t.Fatal(err)
		}
	})
	if schema == "" {
		t.Skip("the subtest was skipped")
	}
	if schemaExists(t, schema) {
		t.Fatalf("schema %s still exists", schema)
	}
	// pg_terminate_backend returns before the backend has gone.
	admin := pgtest.AdminPool(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := admin.QueryRow(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", schema).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d server sessions of the ended test remain", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
