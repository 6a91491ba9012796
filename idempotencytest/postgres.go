package idempotencytest

import (
	"os"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

const (
	// EnvDatabaseURL names the environment variable that, when set, holds
	// the connection string of an existing PostgreSQL server for [Postgres]
	// to use instead of starting a throwaway cluster, e.g.
	// postgres://user:pass@localhost:5432/db?sslmode=disable. The role must
	// be allowed to create schemas in that database; each test gets a new
	// schema, dropped when it ends, and nothing else on the server is
	// touched. The schemas of a test binary that died before its tests
	// ended (-timeout, a panic, SIGKILL) are dropped by the next test
	// binary that starts on that server: each names, in its comment, a
	// session advisory lock that its binary held while it ran. The
	// project's own tests read the same variable.
	EnvDatabaseURL = "IDEMPOTENCY_TEST_DATABASE_URL"

	// EnvPgBinDir names an optional environment variable: a directory
	// holding initdb, pg_ctl and postgres. When it is set, [Postgres] takes
	// the server binaries from there only, instead of from PATH or the
	// newest /usr/lib/postgresql/*/bin.
	EnvPgBinDir = "IDEMPOTENCY_TEST_PG_BINDIR"
)

// Database is one test's private schema on a PostgreSQL server, returned by
// [Postgres].
type Database struct {
	// Pool is a pool (at most 8 connections) whose every connection has
	// search_path set to Schema only, so the tables your test creates with
	// unqualified names are created in, and resolved from, Schema. It is
	// closed when the test ends. The Run of an inbox on it (on the store of
	// Database.NewStore) with more than 7 workers, the default 8 included,
	// warns as it starts that the workers beyond the pool's connections
	// wait, as Run's LISTEN holds one: set InboxConfig.Workers to 7 at most,
	// or open a larger pool with URL. With InboxConfig.PollOnly Run does
	// not listen, and 8 workers fit.
	Pool *pgxpool.Pool

	// Schema is the schema's name, unique on the server: pass it as
	// idempotency.PgxConfig.Schema, or use [Database.NewStore], which does.
	Schema string

	// URL is a connection string for the same database, with the options
	// of the server's connection string, whose sessions have search_path
	// set to Schema, for code that opens its own connections (a pool with
	// more connections, a subprocess, psql). Sessions opened with it are
	// terminated when the test ends. A store opened on it (your service
	// started as a subprocess) still needs Schema as
	// idempotency.PgxConfig.Schema: a PgxStore's schema is "public" by
	// default, whatever the search_path, and its tables there are shared
	// with every other test on the server.
	URL string
}

// mainCalled records that the test binary's TestMain runs through [Main].
var mainCalled atomic.Bool

// Postgres gives the test a fresh, empty schema on a real PostgreSQL server,
// isolated from every other test's, and a pool bound to it. It is safe to
// call from parallel tests.
//
// The first call in a test binary starts a throwaway cluster from the local
// server binaries, which every later call shares; with [EnvDatabaseURL] set,
// that server is used instead. See the package documentation for where the
// binaries are looked up, what happens when there are none, and why the
// package's TestMain must call [Main].
//
// When the test ends, the pool is closed, sessions still connected with
// [Database.URL] are terminated, and the schema is dropped with everything
// in it. A connection of the pool the test left in use (rows not closed, a
// transaction neither committed nor rolled back) fails the test 30 seconds
// after it ended, rather than hang the test binary until -timeout. The
// cluster itself is removed by [Main] after the last test.
func Postgres(t testing.TB) *Database {
	t.Helper()
	if !mainCalled.Load() && os.Getenv(EnvDatabaseURL) == "" {
		t.Fatalf("idempotencytest: Postgres starts a throwaway PostgreSQL cluster, which must be removed after the tests: "+
			"the package's TestMain must call idempotencytest.Main, e.g.\n\n"+
			"\tfunc TestMain(m *testing.M) { os.Exit(idempotencytest.Main(m)) }\n\n"+
			"(or set %s to use an existing server)", EnvDatabaseURL)
	}
	db := pgtest.New(t)
	return &Database{Pool: db.Pool, Schema: db.Schema, URL: db.URL}
}

// NewStore returns a PgxStore on db.Pool whose tables are in db.Schema,
// migrated: the store a test of a handler delivers to. cfg.Schema must be
// empty or db.Schema: a store in any other schema (by default "public")
// would share its ledger with other tests. Each call returns another store
// on the same tables, as another replica of the service would have. Another
// cfg.Schema, a cfg NewPgxStore refuses or a failed Migrate fails the test
// with t.Fatal: call it from the test's goroutine.
func (db *Database) NewStore(t testing.TB, cfg idempotency.PgxConfig) *idempotency.PgxStore {
	t.Helper()
	if cfg.Schema != "" && cfg.Schema != db.Schema {
		t.Fatalf("idempotencytest: NewStore: PgxConfig.Schema is %q; leave it empty, the test's schema is %q", cfg.Schema, db.Schema)
	}
	cfg.Schema = db.Schema
	store, err := idempotency.NewPgxStore(db.Pool, cfg)
	if err != nil {
		t.Fatalf("idempotencytest: NewStore: %v", err)
	}
	if err := store.Migrate(t.Context()); err != nil {
		t.Fatalf("idempotencytest: NewStore: migrate: %v", err)
	}
	return store
}

// Main runs the tests, then stops the throwaway PostgreSQL cluster started
// by [Postgres] (if any) and removes its temporary directory, whether or not
// the tests passed. It returns m.Run's exit code. A package whose tests call
// Postgres must call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(idempotencytest.Main(m)) }
//
// Without it, Postgres fails the test with a message saying so, rather than
// start a cluster that nothing would stop at the end of the run (unless
// [EnvDatabaseURL] is set: then there is no cluster to stop, and Main only
// runs the tests). If the test binary dies before Main can clean up (a
// panicking test, -timeout, Ctrl-C, SIGKILL), a small watchdog process
// started with the cluster notices the binary is gone and removes the
// cluster (on Unix; elsewhere it is left in the temporary directory). On
// a server named by [EnvDatabaseURL], the next test binary that uses it
// drops the schemas of the tests the dead binary was running. Once Main
// has returned, Postgres fails the test: Main has finished.
func Main(m *testing.M) int {
	mainCalled.Store(true)
	return pgtest.Main(m)
}
