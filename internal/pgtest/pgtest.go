// Package pgtest gives each Go test its own, isolated PostgreSQL schema on a
// real server.
//
// # Server
//
// By default the first call to [New], [NewWithConfig], [AdminPool] or
// [Server] in a test binary starts a throwaway PostgreSQL cluster from the
// local server binaries (initdb, pg_ctl, postgres). The cluster lives in a
// fresh temporary directory, listens on a unix socket inside that directory
// (what [New] connects through) and on a free port of 127.0.0.1 (see
// [Cluster.TCP]), and is tuned for tests (fsync=off, full_page_writes=off,
// max_connections=300). synchronous_commit stays on: with fsync=off it costs
// only a write() per commit, and it guarantees that a commit that returned
// survives [Cluster.Kill]. [Main] stops the cluster and removes the directory
// after all tests have run, so every package that uses pgtest must have
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// If the test binary dies before Main can clean up, a watchdog process does
// it (see [Main]).
//
// A program that is not a test (a chaos run) starts a cluster of its own
// with [StartCluster].
//
// A [Template] gives tests schemas already prepared (migrated, say), and
// reuses, reset, those its tests left as prepared.
//
// Isolation is by search_path, not by permissions: every test connects as the
// same role, so a test could still reach another test's schema by qualifying
// names. Do not rely on that.
//
// If the environment variable IDEMPOTENCY_TEST_DATABASE_URL is set, that
// server is used instead and no cluster is started; schemas are still created
// per test inside it, and [Server] skips. A test binary that dies before its
// tests' cleanups run leaves their schemas there: each carries a comment
// naming a session advisory lock its binary held, and the next binary to
// start on that server drops the schemas whose lock nobody holds any more.
//
// # Finding the binaries
//
// If IDEMPOTENCY_TEST_PG_BINDIR is set, initdb, pg_ctl and postgres are taken
// from that directory only. Otherwise they are looked up on PATH, and then in
// the newest /usr/lib/postgresql/<version>/bin (the Debian/Ubuntu layout of the
// "postgresql" package).
//
// # Running as root
//
// PostgreSQL refuses to run as root. When the tests run as root, initdb,
// pg_ctl and postgres are run as the existing OS user "postgres", and the
// temporary directory is created under /tmp and handed to that user. pgtest
// never creates OS users: if there is no "postgres" user, PostgreSQL counts as
// unavailable, with a message saying how to create one.
//
// # When PostgreSQL is unavailable
//
// If no server can be started (no binaries, initdb or start fails, ...), every
// test that asks for a database is skipped with a message on how to get
// PostgreSQL (apt install postgresql, or set IDEMPOTENCY_TEST_DATABASE_URL),
// also printed once to stderr. With CI=true (or CI=1, CI=yes: any value
// but a false one, see internal/ci) those tests fail instead. The start is
// attempted only once per test binary; later tests report the
// remembered error at once. A misconfiguration that is clearly a bug (an
// unreachable IDEMPOTENCY_TEST_DATABASE_URL, a TestMain that does not call
// [Main]) always fails.
package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed-a84bb619/idempotency/internal/ci"
)

const (
	// EnvDatabaseURL names the environment variable that, when set, holds the
	// connection string of an existing PostgreSQL server to use instead of a
	// throwaway cluster. The role it connects as must be allowed to create
	// schemas in its database.
	EnvDatabaseURL = "IDEMPOTENCY_TEST_DATABASE_URL"

	// EnvBinDir names an optional environment variable: a directory holding
	// initdb, pg_ctl and postgres. When set, no other place is searched.
	EnvBinDir = "IDEMPOTENCY_TEST_PG_BINDIR"

	// DefaultMaxConns is the MaxConns of the pool [New] returns.
	DefaultMaxConns = 8

	pgCtlTimeout = 60 // seconds, pg_ctl -t
	cmdTimeout   = 2 * time.Minute
	opTimeout    = time.Minute
)

// terminateWait is how long a test's cleanup waits for each session it
// terminates to end.
const terminateWait = 10 * time.Second

// releaseWait is how long a test's cleanup waits for the connections of its
// pool to be released before it reports them as left in use.
var releaseWait = 30 * time.Second

// DB is one test's private schema and a pool bound to it.
type DB struct {
	// Pool is a pool whose every connection has search_path set to Schema
	// only, so unqualified names are created in and resolved from Schema.
	// It is closed when the test ends.
	Pool *pgxpool.Pool

	// Schema is the schema's name: "t_" followed by 16 random hex digits,
	// unique on the server. Quote it with pgx.Identifier{Schema}.Sanitize()
	// when building SQL.
	Schema string

	// URL is a connection string for the same database whose connections
	// have search_path set to Schema (added to the "options" parameter of
	// the server's connection string, which both pgx and libpq tools such
	// as psql understand), for code that opens its own connections, e.g. a
	// subprocess. Sessions opened with it carry application_name=Schema and
	// are terminated when the test ends.
	URL string

	bouncerDB string // the PgBouncer database name of Bouncer.NewFrom's pool
}

// New gives the test a fresh, empty schema on the shared server and a pool
// (MaxConns [DefaultMaxConns]) whose connections use that schema as their only
// search_path. When the test ends, the pool is closed, any session still
// connected with [DB.URL] is terminated, and the schema is dropped with
// CASCADE. A connection of the pool still in use 30 seconds after the test
// ended (rows not closed, a transaction not ended) fails the test; the
// sessions are terminated and the schema dropped all the same. It is safe
// to call from parallel tests; every call returns a different schema. If
// PostgreSQL is unavailable the test is skipped (or fails under CI=true);
// see the package documentation.
func New(t testing.TB) *DB {
	t.Helper()
	return NewWithConfig(t, nil)
}

// NewWithConfig is [New], but calls configure (if not nil) on the pool
// configuration before the pool is created, so a test can raise MaxConns, set
// timeouts or add hooks. configure must not change the database, user or host;
// it may override RuntimeParams["search_path"] at its own risk. Hooks it sets
// (AfterConnect, BeforeClose, ShouldPing) are kept and run in addition to
// pgtest's own.
func NewWithConfig(t testing.TB, configure func(*pgxpool.Config)) *DB {
	t.Helper()
	s := shared(t)
	schema := s.createSchema(t)
	db := &DB{Schema: schema, URL: withSchema(s.url, schema)}
	t.Cleanup(func() { s.dropSchema(t, db) })
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	db.Pool = s.openTestPool(ctx, t, schema, configure)
	return db
}

// createSchema creates a new, empty schema for t and returns its name.
func (s *server) createSchema(t testing.TB) string {
	t.Helper()
	schema := "t_" + randomHex(8)
	ident := pgx.Identifier{schema}.Sanitize()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	create := "CREATE SCHEMA " + ident
	if s.ownerKey != 0 { // an external server
		// One statement list, one implicit transaction: no schema exists
		// without the comment that lets a later binary sweep it.
		create += "; COMMENT ON SCHEMA " + ident + " IS '" + ownerTag + strconv.FormatInt(s.ownerKey, 10) + "'"
	}
	if err := s.adminExec(ctx, create); err != nil {
		t.Fatalf("pgtest: create schema %s: %v", schema, err)
	}
	return schema
}

// openTestPool opens the pool of [DB.Pool] on schema, configured as
// [NewWithConfig] says.
func (s *server) openTestPool(ctx context.Context, t testing.TB, schema string, configure func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(s.url)
	if err != nil {
		t.Fatalf("pgtest: parse connection string: %v", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["application_name"] = schema
	cfg.MaxConns = DefaultMaxConns
	if configure != nil {
		configure(cfg)
	}
	pool, err := s.openPool(ctx, cfg)
	if err != nil {
		t.Fatalf("pgtest: open pool for schema %s: %v", schema, err)
	}
	return pool
}

// AdminPool returns a new pool (MaxConns 4, application_name "pgtest_admin")
// connected to the server's default database without a per-test schema, e.g.
// for pg_terminate_backend or for inspecting pg_stat_activity. It is closed
// when the test ends. Skips or fails like [New] when PostgreSQL is
// unavailable.
func AdminPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	s := shared(t)
	cfg, err := pgxpool.ParseConfig(s.url)
	if err != nil {
		t.Fatalf("pgtest: parse connection string: %v", err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "pgtest_admin"
	cfg.MaxConns = 4
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	pool, err := s.openPool(ctx, cfg)
	if err != nil {
		t.Fatalf("pgtest: open admin pool: %v", err)
	}
	t.Cleanup(func() { closePool(t, pool, "AdminPool", "The pool is left open.") })
	return pool
}

// LockWaiters returns how many sessions whose application_name is app
// (a test schema's name: see [New]) wait on a lock now, as tests that
// poll for a blocked run read it. A wait on an object lock is not one:
// a NOTIFY's commit waits there (wait_event 'object') for the commit of
// every other NOTIFY on the server, those of other tests too, and a
// PgxStore's inbox sends one after each event it stores. It reads
// through one pool of the binary's (two sessions at most,
// application_name "pgtest_waiters"), opened at the first call and
// closed by [Main]: a pool per test cost a session per test, and a
// session's start and end cost more CPU than the test's polling does.
func LockWaiters(t testing.TB, app string) (int, error) {
	t.Helper()
	pool, err := shared(t).waitersPool()
	if err != nil {
		return 0, err
	}
	var n int
	err = pool.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event <> 'object' AND application_name = $1`, app).Scan(&n)
	return n, err
}

// waitersPool returns the pool [LockWaiters] reads through, opening it
// at the first call.
func (s *server) waitersPool() (*pgxpool.Pool, error) {
	s.waitersMu.Lock()
	defer s.waitersMu.Unlock()
	if s.waiters != nil {
		return s.waiters, nil
	}
	cfg, err := pgxpool.ParseConfig(s.url)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "pgtest_waiters"
	cfg.MaxConns = 2
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if s.waiters, err = s.openPool(ctx, cfg); err != nil {
		return nil, err
	}
	return s.waiters, nil
}

// closePool closes pool, which waits until every connection acquired from
// it is released. A test that left one in use would make that wait, and so
// the whole test binary, last until -timeout; after [releaseWait] the test
// fails instead. Its error names the pool (what) and ends with what the
// cleanup does next (after). The pool's Close goes on waiting in its
// goroutine. closePool reports whether the pool closed in time.
func closePool(t testing.TB, pool *pgxpool.Pool, what, after string) bool {
	closed := make(chan struct{})
	go func() {
		pool.Close()
		close(closed)
	}()
	timer := time.NewTimer(releaseWait)
	defer timer.Stop()
	select {
	case <-closed:
		return true
	case <-timer.C:
		n := pool.Stat().AcquiredConns()
		conns := "connections"
		if n == 1 {
			conns = "connection"
		}
		t.Errorf("pgtest: the pool of %s still has %d %s not released %v after the test ended: "+
			"the test left it in use (rows not closed, a transaction neither committed nor rolled back, "+
			"or an acquired connection not released). %s", what, n, conns, releaseWait, after)
		return false
	}
}

// Server returns the throwaway cluster, for fault tests that stop, kill and
// restart it. It skips the test when IDEMPOTENCY_TEST_DATABASE_URL is set
// (an external server is never stopped), and skips or fails like [New] when
// PostgreSQL is unavailable.
//
// Stopping the server breaks every connection of every test in the binary, so
// a test that uses Server must not call t.Parallel (Go runs parallel tests
// only after all sequential ones, so then nothing else is affected). When the
// test ends the cluster is started again if the test left it down.
func Server(t testing.TB) *Cluster {
	t.Helper()
	s := shared(t)
	if s.cluster == nil {
		t.Skipf("pgtest: %s is set, so the tests use an external server, which this fault test would have to stop; it runs only against the throwaway cluster", EnvDatabaseURL)
	}
	c := s.cluster
	t.Cleanup(func() { c.ensureRunning(t) })
	return c
}

// Main runs the tests and afterwards, whether or not they passed, closes
// pgtest's own connections and, if this test binary started a cluster, shuts
// it down (immediate mode) and removes its temporary directory. It returns
// m.Run's exit code. Call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// pgtest refuses to start a cluster in a binary whose TestMain does not call
// Main, because the cluster would outlive the tests. If the binary dies before
// Main can clean up (a panicking test, -timeout, Ctrl-C, SIGKILL), a small
// watchdog process (/bin/sh, started with the cluster) notices that the
// binary is gone and does the same cleanup. A leftover could never block
// later runs anyway: each run uses a fresh directory and socket.
func Main(m *testing.M) int {
	mainCalled.Store(true)
	code := m.Run()
	shutdown()
	return code
}

// ---------------------------------------------------------------------------
// Shared server state.

type server struct {
	url     string        // connection string for the default database
	cluster *Cluster      // nil when an external server is used
	admin   *pgxpool.Pool // pgtest's own pool for CREATE/DROP SCHEMA
	version int           // server_version_num

	// waiters is the pool LockWaiters reads through, opened at its first
	// call (under waitersMu).
	waitersMu sync.Mutex
	waiters   *pgxpool.Pool

	// owner, on an external server only, is a session that holds the
	// advisory lock ownerKey while this binary runs. Every schema the
	// binary creates there names the key in its comment, so that a later
	// binary can tell the schemas of one that died (see sweepOrphans).
	owner    *pgx.Conn
	ownerKey int64
	// ownerStop ends keepOwnership, which closes owner and then ownerDone.
	ownerStop, ownerDone chan struct{}
}

// ownerCheck is how often keepOwnership checks that the owner session is
// alive, and ownerGrace how long sweepOrphans gives a binary whose lock is
// free to take it again before calling it dead: a session the server ended
// (a restart, pg_terminate_backend, idle_session_timeout: the owner sits
// idle all run long) releases the lock of a binary still running. A test
// lengthens ownerGrace, taking the lock again from a pool of its own.
const ownerCheck = 250 * time.Millisecond

var ownerGrace = 8 * ownerCheck

// ownerTag starts the comment of a schema created on an external server,
// followed by the owner's advisory lock key.
const ownerTag = "pgtest: schema of the test binary holding advisory lock "

// takeOwnership opens s.owner and takes a fresh advisory lock with it.
func (s *server) takeOwnership() error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	conn, err := s.ownerConn(ctx)
	if err != nil {
		return err
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	key := int64(binary.BigEndian.Uint64(b[:])>>1) | 1 // positive (never 0: no owner), random
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
		_ = conn.Close(ctx)
		return err
	}
	s.owner, s.ownerKey = conn, key
	return nil
}

// keepOwnership runs while the binary does: when the server ended the
// owner session, it connects again and takes the same lock again, well
// within ownerGrace, so that the binary's schemas are not taken for a
// dead binary's. It owns s.owner; it closes it when s.ownerStop closes.
func (s *server) keepOwnership() {
	defer close(s.ownerDone)
	t := time.NewTicker(ownerCheck)
	defer t.Stop()
	for {
		select {
		case <-s.ownerStop:
			if s.owner != nil {
				ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
				_ = s.owner.Close(ctx) // releases the lock: nothing of ours is left
				cancel()
			}
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		if s.owner != nil && s.owner.Ping(ctx) == nil {
			cancel()
			continue
		}
		if s.owner != nil {
			_ = s.owner.Close(ctx)
			s.owner = nil
		}
		if conn, err := s.ownerConn(ctx); err == nil {
			// Blocks while a sweeping binary holds it for a moment.
			if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", s.ownerKey); err == nil {
				s.owner = conn
			} else {
				_ = conn.Close(ctx)
			}
		}
		cancel()
	}
}

func (s *server) ownerConn(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(s.url)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = "pgtest_harness"
	return pgx.ConnectConfig(ctx, cfg)
}

// sweepOrphans drops the schemas that test binaries which died before
// their cleanup (-timeout, a panic, SIGKILL) left on the external server:
// those whose comment names an advisory lock that nobody holds any more,
// and that no session is connected to under the schema's name (as a
// running test's pool is), nor again after ownerGrace (a running binary
// whose session the server ended takes its lock again meanwhile, see
// keepOwnership). The schemas of binaries still running, and
// every schema pgtest did not create, are left alone. It is best effort: a failure is reported on
// stderr only.
func (s *server) sweepOrphans() {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	rows, err := s.owner.Query(ctx, `SELECT n.nspname, d.description FROM pg_namespace n
JOIN pg_description d ON d.objoid = n.oid AND d.classoid = 'pg_namespace'::regclass AND d.objsubid = 0
WHERE n.nspname LIKE 't\_%' AND starts_with(d.description, $1)
-- A pool of a running test is connected under its schema's name.
AND NOT EXISTS (SELECT FROM pg_stat_activity a WHERE a.application_name = n.nspname)`, ownerTag)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: look for schemas left by test binaries that died: %v\n", err)
		return
	}
	type orphan struct {
		schema string
		key    int64
	}
	var found []orphan
	for rows.Next() {
		var schema, comment string
		if err := rows.Scan(&schema, &comment); err != nil {
			break
		}
		key, err := strconv.ParseInt(strings.TrimPrefix(comment, ownerTag), 10, 64)
		if err == nil && key != s.ownerKey {
			found = append(found, orphan{schema, key})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: look for schemas left by test binaries that died: %v\n", err)
		return
	}
	// free reports whether nobody holds key's lock now, and leaves it so.
	free := func(key int64) bool {
		var ok bool
		if err := s.owner.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&ok); err != nil || !ok {
			return false
		}
		_, err := s.owner.Exec(ctx, "SELECT pg_advisory_unlock($1)", key)
		return err == nil
	}
	// A lock free once may be a running binary's whose session the server
	// ended: it is free for good only if still free after ownerGrace, in
	// which keepOwnership takes it again. A lock taken again meanwhile
	// (looked at every ownerCheck) is a running binary's: once every one
	// is, there is nothing to wait for.
	var suspects []orphan
	for _, o := range found {
		if free(o.key) {
			suspects = append(suspects, o)
		}
	}
	for deadline := time.Now().Add(ownerGrace); len(suspects) > 0 && time.Now().Before(deadline); {
		time.Sleep(min(ownerCheck, time.Until(deadline)))
		suspects = slices.DeleteFunc(suspects, func(o orphan) bool { return !free(o.key) })
	}
	for _, o := range suspects {
		var got bool
		if err := s.owner.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", o.key).Scan(&got); err != nil || !got {
			continue // its binary still runs
		}
		_, err := s.owner.Exec(ctx, dropSchemaSQL(o.schema))
		_, _ = s.owner.Exec(ctx, "SELECT pg_advisory_unlock($1)", o.key)
		if err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: drop schema %s, left by a test binary that died: %v\n", o.schema, err)
		}
	}
}

var (
	startOnce  sync.Once
	srv        *server
	srvErr     error
	mainCalled atomic.Bool
	errClosed  = errors.New("pgtest: Main has finished; no more databases")
)

// unavailableError means this machine cannot provide a PostgreSQL server;
// tests skip on it unless CI=true.
type unavailableError struct{ msg string }

func (e *unavailableError) Error() string { return e.msg }

func unavailable(format string, args ...any) error {
	return &unavailableError{msg: fmt.Sprintf(format, args...)}
}

// shared returns the server, starting it on first use, or ends the test.
func shared(t testing.TB) *server {
	t.Helper()
	startOnce.Do(func() { srv, srvErr = start(t) })
	if srvErr != nil {
		var ue *unavailableError
		if errors.As(srvErr, &ue) && !ci.On() {
			t.Skipf("pgtest: SKIPPED, no PostgreSQL: %v\n%s", srvErr, howToGet())
		}
		if errors.As(srvErr, &ue) {
			t.Fatalf("pgtest: no PostgreSQL and CI=true: %v\n%s", srvErr, howToGet())
		}
		t.Fatalf("%v", srvErr)
	}
	return srv
}

func howToGet() string {
	return fmt.Sprintf("pgtest: to run the database tests, install the PostgreSQL server binaries (Debian/Ubuntu: apt install postgresql) "+
		"or point %s at a server (e.g. postgres://user:pass@localhost:5432/db?sslmode=disable). With CI=true these tests fail instead of skipping.",
		EnvDatabaseURL)
}

func start(t testing.TB) (*server, error) {
	begin := time.Now()
	s, err := startServer()
	if err != nil {
		var ue *unavailableError
		if errors.As(err, &ue) {
			// Skips are invisible without -v; say it once, loudly.
			what := "be SKIPPED"
			if ci.On() {
				what = "FAIL (CI=true)"
			}
			fmt.Fprintf(os.Stderr, "\n*** pgtest: PostgreSQL is unavailable, database tests will %s: %v\n*** %s\n\n", what, err, howToGet())
		}
		return nil, err
	}
	if s.cluster != nil {
		t.Logf("pgtest: started throwaway PostgreSQL cluster in %s (%s)", time.Since(begin).Round(time.Millisecond), s.cluster.dir)
	}
	return s, nil
}

func startServer() (*server, error) {
	if u := os.Getenv(EnvDatabaseURL); u != "" {
		s := &server{url: u}
		if err := s.connectAdmin(); err != nil {
			return nil, fmt.Errorf("pgtest: cannot use %s: %w", EnvDatabaseURL, err)
		}
		if err := s.takeOwnership(); err != nil {
			s.admin.Close()
			return nil, fmt.Errorf("pgtest: cannot use %s: %w", EnvDatabaseURL, err)
		}
		s.sweepOrphans()
		s.ownerStop, s.ownerDone = make(chan struct{}), make(chan struct{})
		go s.keepOwnership()
		return s, nil
	}
	if !mainCalled.Load() {
		return nil, errors.New("pgtest: the package's TestMain must call pgtest.Main, e.g. func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }, " +
			"so that the throwaway PostgreSQL cluster is removed after the tests")
	}
	c, err := startCluster()
	if err != nil {
		return nil, err
	}
	s := &server{url: c.url, cluster: c}
	if err := s.connectAdmin(); err != nil {
		c.destroy()
		return nil, unavailable("cluster started but cannot connect: %v", err)
	}
	return s, nil
}

func (s *server) connectAdmin() error {
	cfg, err := pgxpool.ParseConfig(s.url)
	if err != nil {
		return err
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "pgtest_harness"
	cfg.MaxConns = 4
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if s.admin, err = s.openPool(ctx, cfg); err != nil {
		return err
	}
	if err := s.admin.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&s.version); err != nil {
		s.admin.Close()
		return err
	}
	return nil
}

func shutdown() {
	stopBouncer() // before the server it leads to
	// Do waits for a start in progress and prevents any later one.
	startOnce.Do(func() { srvErr = errClosed })
	s := srv
	if s == nil {
		return
	}
	// A test of a later m.Run (Main called again) is told Main has
	// finished, rather than handed the server torn down here.
	srv, srvErr = nil, errClosed
	templates.Lock()
	dropTemplateSchemas(s, templates.all)
	templates.Unlock()
	s.waitersMu.Lock()
	if s.waiters != nil {
		s.waiters.Close()
	}
	s.waitersMu.Unlock()
	s.admin.Close()
	if s.ownerStop != nil {
		close(s.ownerStop) // keepOwnership closes the owner session
		<-s.ownerDone
	}
	if s.cluster != nil {
		s.cluster.destroy()
	}
}

// openPool creates a pool and checks that it can connect. For the throwaway
// cluster it adds hooks so that a connection made before the last Stop/Kill
// is always pinged (and so replaced) before it is handed out: after
// Cluster.Start the next query on an existing pool succeeds.
func (s *server) openPool(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	if c := s.cluster; c != nil {
		var born sync.Map // *pgx.Conn -> cluster generation when it connected
		userAfterConnect, userBeforeClose, userShouldPing := cfg.AfterConnect, cfg.BeforeClose, cfg.ShouldPing
		cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
			born.Store(conn, c.gen.Load())
			if userAfterConnect != nil {
				return userAfterConnect(ctx, conn)
			}
			return nil
		}
		cfg.BeforeClose = func(conn *pgx.Conn) {
			born.Delete(conn)
			if userBeforeClose != nil {
				userBeforeClose(conn)
			}
		}
		cfg.ShouldPing = func(ctx context.Context, p pgxpool.ShouldPingParams) bool {
			if g, ok := born.Load(p.Conn); !ok || g.(uint64) != c.gen.Load() {
				born.Store(p.Conn, c.gen.Load()) // ping once; it is dropped if dead
				return true
			}
			if userShouldPing != nil {
				return userShouldPing(ctx, p)
			}
			return p.IdleDuration > time.Second // pgxpool's default
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// adminExec runs sql on pgtest's own pool, retrying when the connection was
// broken underneath it (server restarted, backend terminated by a test).
func (s *server) adminExec(ctx context.Context, sql string, args ...any) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		_, err = s.admin.Exec(ctx, sql, args...)
		if err == nil || !isConnectionError(err) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

func isConnectionError(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; class 57: operator intervention
		// (admin shutdown, terminated backend, ...).
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57")
	}
	return true // not a server error: network/protocol level
}

func (s *server) dropSchema(t testing.TB, db *DB) { s.endSchema(t, db, nil) }

// dropSchemaSQL drops schema, with everything in it, if it is there.
func dropSchemaSQL(schema string) string {
	return "DROP SCHEMA IF EXISTS " + pgx.Identifier{schema}.Sanitize() + " CASCADE"
}

// endSchema ends t's use of db's schema: it closes db.Pool, terminates the
// sessions still connected under the schema's name and waits for them to
// end (up to terminateWait each), and drops the schema, unless keep, if
// not nil, is called (only when all that went well) and returns true.
func (s *server) endSchema(t testing.TB, db *DB, keep func(ctx context.Context) bool) {
	released := true
	if db.Pool != nil {
		released = closePool(t, db.Pool, "schema "+db.Schema,
			"Its sessions are terminated and its schema dropped all the same.")
	}
	if s.cluster != nil {
		s.cluster.ensureRunning(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	// Sessions opened with db.URL (e.g. by a subprocess) would hold locks
	// that make DROP SCHEMA wait; those of a closed pool may still be on
	// their way out.
	if err := s.terminateSessions(ctx, db.Schema, nil); err != nil {
		t.Errorf("pgtest: terminate sessions of schema %s: %v", db.Schema, err)
		released = false
	}
	if released && keep != nil && keep(ctx) {
		return
	}
	if err := s.adminExec(ctx, dropSchemaSQL(db.Schema)); err != nil {
		t.Errorf("pgtest: drop schema %s: %v", db.Schema, err)
	}
}

// terminateSessions terminates the sessions connected under schema's
// name but those whose process ids are in except, and waits for them to
// end (up to terminateWait each).
func (s *server) terminateSessions(ctx context.Context, schema string, except []int32) error {
	if except == nil {
		except = []int32{} // not NULL, which <> ALL would match with no pid
	}
	terminate, args := "pg_terminate_backend(pid)", []any{schema, except}
	if s.version >= 140000 { // the timeout is new in PostgreSQL 14
		terminate, args = "pg_terminate_backend(pid, $3)", append(args, terminateWait.Milliseconds())
	}
	return s.adminExec(ctx,
		"SELECT "+terminate+" FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid() AND pid <> ALL($2::int[])",
		args...)
}

// resetSessionSQL resets a session as DISCARD ALL does, but for its
// prepared statements, which pgx's statement cache knows.
const resetSessionSQL = `CLOSE ALL; SET SESSION AUTHORIZATION DEFAULT; RESET ALL; UNLISTEN *;
SELECT pg_advisory_unlock_all(); DISCARD TEMP; DISCARD SEQUENCES`

// namedStatementsSQL tells whether the session holds a prepared
// statement that pgx's statement cache did not prepare (those are named
// stmtcache_ and a hash of their text), or none that it did: then either
// the cache is empty, or the test dropped its statements in SQL (DISCARD
// ALL, DEALLOCATE ALL) and the cache names statements the session no
// longer has. pgx does not say which.
const namedStatementsSQL = `SELECT EXISTS (SELECT FROM pg_prepared_statements WHERE name NOT LIKE 'stmtcache\_%')
  OR NOT EXISTS (SELECT FROM pg_prepared_statements WHERE name LIKE 'stmtcache\_%')`

// dropNamedStatements deallocates every statement of conn's session, and
// empties pgx's caches of them, when a test prepared one by name (PREPARE,
// Conn.Prepare): a fresh session has none, and the next test may prepare
// its own under the same name; or when the session has none of the
// cache's (see namedStatementsSQL). The statements of pgx's statement
// cache alone are kept.
func dropNamedStatements(ctx context.Context, conn *pgx.Conn) error {
	res, err := conn.PgConn().Exec(ctx, namedStatementsSQL).ReadAll()
	if err != nil {
		return err
	}
	if len(res) != 1 || len(res[0].Rows) != 1 || len(res[0].Rows[0]) != 1 {
		return errors.New("pgtest: unexpected answer to the query for prepared statements")
	}
	if string(res[0].Rows[0][0]) != "t" {
		return nil
	}
	return conn.DeallocateAll(ctx)
}

// dropNotifications drops the notifications conn received and keeps for
// a WaitForNotification that has not asked yet: a fresh session has none.
// After the reset's UNLISTEN, no other can arrive.
func dropNotifications(conn *pgx.Conn) {
	done, cancel := context.WithCancel(context.Background())
	cancel() // with none kept, the wait ends at once, the session intact
	for {
		if n, _ := conn.WaitForNotification(done); n == nil {
			return
		}
	}
}

// Sessions kept by [Template.NewPooled]: at most keptPerPool in a pool,
// and keptSessions.max in all, so that idle sessions never take the
// connections tests need (the throwaway cluster's max_connections is
// 300; a test's pool may open 24).
const keptPerPool = 4

var keptSessions = struct {
	sync.Mutex
	n, max int
}{max: 48}

// keepSessions reserves up to n sessions of the budget and returns how
// many it could; releaseSessions gives n back. When fewer than n are
// free, it first calls evict(n), which may release some.
func keepSessions(n int, evict func(n int)) int {
	if freeSessions() < n {
		evict(n)
	}
	keptSessions.Lock()
	defer keptSessions.Unlock()
	n = min(n, keptSessions.max-keptSessions.n)
	keptSessions.n += n
	return n
}

// freeSessions is how many sessions the budget has left.
func freeSessions() int {
	keptSessions.Lock()
	defer keptSessions.Unlock()
	return keptSessions.max - keptSessions.n
}

func releaseSessions(n int) {
	keptSessions.Lock()
	keptSessions.n -= n
	keptSessions.Unlock()
}

// endPooledSchema ends t's use of db's schema, as endSchema does, but
// keeps db.Pool open with up to keptPerPool of its sessions, as the
// budget of kept sessions allows (evict, called when it is short, may
// close sessions kept longer): it shuts gate, the pool's, closes the
// other sessions, resets those it keeps, terminates every other session
// connected under the schema's name, and calls keep with the pool and
// its sessions' process ids. It reports whether keep returned true, the
// kept sessions then counted in the budget until the pool is taken or
// closed. When keep returned false, or a connection of the pool was in
// use, none could be kept, one could not be reset, or the gate refused
// one meanwhile, the pool is open (with fewer sessions, maybe) and the
// caller ends the schema as endSchema does.
func (s *server) endPooledSchema(t testing.TB, db *DB, gate *poolGate, evict func(n int), keep func(ctx context.Context, pool *pgxpool.Pool, idle []int32) bool) bool {
	if s.cluster != nil {
		s.cluster.ensureRunning(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	pool := db.Pool
	if pool.Stat().AcquiredConns() != 0 {
		return false
	}
	conns := pool.AcquireAllIdle(ctx)
	gate.shut() // a connection asked for from now on is refused
	n := 0
	if len(conns) > 0 && pool.Stat().TotalConns() == int32(len(conns)) {
		n = keepSessions(min(len(conns), keptPerPool), evict)
	}
	ok := n > 0
	idle := make([]int32, 0, n)
	for i, c := range conns {
		if i >= n && ok {
			_ = c.Hijack().Close(ctx) // a session more than the pool may keep
			continue
		}
		if ok {
			ok = c.Conn().PgConn().Exec(ctx, resetSessionSQL).Close() == nil &&
				dropNamedStatements(ctx, c.Conn()) == nil
			dropNotifications(c.Conn())
		}
		idle = append(idle, int32(c.Conn().PgConn().PID()))
		c.Release()
	}
	if !ok || gate.refused() {
		releaseSessions(n)
		return false
	}
	if err := s.terminateSessions(ctx, db.Schema, idle); err != nil || !keep(ctx, pool, idle) {
		releaseSessions(n)
		return false
	}
	return true
}

// withSchema returns base with options "-c search_path=schema" and
// application_name=schema added, in a form both pgx and libpq accept.
func withSchema(base, schema string) string {
	return withParams(base, "-csearch_path="+schema, schema)
}

// WithOptions returns the connection string base with options (such as
// "-c default_transaction_read_only=on") added after the "options" it has,
// in either of its forms (a URL, or keyword/value as libpq also takes).
func WithOptions(base, options string) string {
	return withParams(base, options, "")
}

// withParams adds options to base's, and sets application_name when
// appName is not empty (then a search_path parameter of a URL goes: the
// options set it).
func withParams(base, options, appName string) string {
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		u, err := url.Parse(base)
		if err == nil {
			q := u.Query()
			q.Set("options", strings.TrimSpace(q.Get("options")+" "+options))
			if appName != "" {
				q.Del("search_path")
				q.Set("application_name", appName)
			}
			u.RawQuery = encodeQuery(q)
			return u.String()
		}
	}
	// Keyword/value form; a later keyword overrides an earlier one, so the
	// options of base are repeated in the one added.
	if cfg, err := pgconn.ParseConfig(base); err == nil && cfg.RuntimeParams["options"] != "" {
		options = cfg.RuntimeParams["options"] + " " + options
	}
	out := base + " options='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(options) + "'"
	if appName != "" {
		out += " application_name=" + appName
	}
	return out
}

// encodeQuery is url.Values.Encode, but with spaces as %20: libpq does not
// decode '+'.
func encodeQuery(q url.Values) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		for _, v := range q[k] {
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(strings.ReplaceAll(url.QueryEscape(k), "+", "%20"))
			b.WriteByte('=')
			b.WriteString(strings.ReplaceAll(url.QueryEscape(v), "+", "%20"))
		}
	}
	return b.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b)
}

// ---------------------------------------------------------------------------
// The throwaway cluster.

// Cluster is the throwaway PostgreSQL cluster started by this test binary:
// one data directory, reachable through a unix socket in its temporary
// directory and on a loopback port. Its methods are safe for concurrent use, but see [Server] about
// parallel tests. Each method ends the test with t.Fatalf on failure, so call
// it from the test's goroutine.
type Cluster struct {
	initdb, pgCtl, postgres string // binaries
	dir                     string // temporary directory; holds the socket
	data                    string // data directory
	logFile                 string // server log (pg_ctl -l)
	url                     string
	cred                    *osUser // nil unless we run as root
	port                    int     // TCP port on 127.0.0.1, and the socket's number

	watchdog     *os.File        // see startWatchdog; nil if none
	watchdogDone <-chan struct{} // closed when the watchdog has exited

	gen atomic.Uint64 // bumped whenever the server went down

	mu      sync.Mutex
	running bool
}

// Stop shuts the server down in fast mode (pg_ctl stop -m fast: open
// transactions are rolled back, sessions disconnected) and returns once it has
// exited. Stopping a stopped server does nothing.
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	if err := c.stop("fast"); err != nil {
		t.Fatalf("%v", err)
	}
}

// Kill shuts the server down in immediate mode (pg_ctl stop -m immediate: all
// server processes quit at once, as in a crash; the next Start runs crash
// recovery) and returns once it has exited. Transactions whose commit has
// returned survive. Killing a stopped server does nothing.
func (c *Cluster) Kill(t testing.TB) {
	t.Helper()
	if err := c.stop("immediate"); err != nil {
		t.Fatalf("%v", err)
	}
}

// Start starts the server again on the same data directory and socket, so
// existing connection strings and pools keep working, and returns once it
// accepts connections. Connections that pools made before the server went
// down are discarded on their next use. Starting a running server does
// nothing.
func (c *Cluster) Start(t testing.TB) {
	t.Helper()
	if err := c.start(); err != nil {
		t.Fatalf("%v", err)
	}
}

// start starts the server unless it runs.
func (c *Cluster) start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		return nil
	}
	if err := c.pgCtlStart(); err != nil {
		return err
	}
	c.running = true
	return nil
}

// URL returns a connection string for the cluster's default database
// ("postgres", as superuser "postgres").
func (c *Cluster) URL() string { return c.url }

// TCP returns dbURL (a [DB.URL] of this cluster) connecting over TCP to
// 127.0.0.1 instead of the unix socket: a connection the server drops then
// fails as it does in production, with a TCP error or a FATAL message
// rather than a broken pipe.
func (c *Cluster) TCP(t testing.TB, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("pgtest: parse %q: %v", dbURL, err)
	}
	q := u.Query()
	q.Set("host", "127.0.0.1")
	q.Set("port", strconv.Itoa(c.port))
	u.RawQuery = encodeQuery(q)
	return u.String()
}

// freeLoopbackPort returns a TCP port on 127.0.0.1 that was free a moment
// ago.
func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// clusterPort picks the cluster's port; a test replaces it.
var clusterPort = freeLoopbackPort

// maxPortAttempts is how many ports the cluster's first start tries, each
// free when picked, before PostgreSQL counts as unavailable.
const maxPortAttempts = 5

// pickPort gives the cluster a port that is free now, and the connection
// string that goes with it (the unix socket's name carries the port too).
func (c *Cluster) pickPort() error {
	port, err := clusterPort()
	if err != nil {
		return unavailable("find a free loopback port: %v", err)
	}
	c.port = port
	c.url = (&url.URL{Scheme: "postgres", Path: "/postgres", RawQuery: encodeQuery(url.Values{
		"host":    {c.dir},
		"port":    {strconv.Itoa(c.port)},
		"user":    {"postgres"},
		"sslmode": {"disable"},
	})}).String()
	return nil
}

// portTaken reports whether the server log, past its first logged bytes,
// says that the server could not bind its port because it is in use.
func (c *Cluster) portTaken(logged int64) bool {
	return logSays(c.logFile, logged, "could not bind", "Address already in use")
}

// logSays reports whether the log at path, past its first logged bytes,
// holds every one of words.
func logSays(path string, logged int64, words ...string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if _, err := f.Seek(logged, io.SeekStart); err != nil {
		return false
	}
	b, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	for _, w := range words {
		if !bytes.Contains(b, []byte(w)) {
			return false
		}
	}
	return true
}

// fileSize is the size of the file at path, 0 if it cannot be read.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// LogFile returns the path of the server log, useful when a fault test fails.
func (c *Cluster) LogFile() string { return c.logFile }

func (c *Cluster) ensureRunning(t testing.TB) {
	t.Helper()
	c.Start(t)
}

func (c *Cluster) stop(mode string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.running {
		return nil
	}
	out, err := c.run(c.pgCtl, "stop", "-D", c.data, "-m", mode, "-w", "-t", strconv.Itoa(pgCtlTimeout), "-s")
	// Whatever happened, connections made so far must not be trusted.
	c.gen.Add(1)
	if err != nil {
		return fmt.Errorf("pgtest: pg_ctl stop -m %s: %v\n%s%s", mode, err, out, c.logTail())
	}
	c.running = false
	return nil
}

func (c *Cluster) pgCtlStart() error {
	out, err := c.run(c.pgCtl, "start", "-D", c.data, "-l", c.logFile, "-o", "-p "+strconv.Itoa(c.port),
		"-w", "-t", strconv.Itoa(pgCtlTimeout), "-s")
	if err != nil {
		return fmt.Errorf("pgtest: pg_ctl start: %v\n%s%s", err, out, c.logTail())
	}
	return nil
}

// destroy stops the server at once and removes its directory.
func (c *Cluster) destroy() {
	c.mu.Lock()
	// Also when not known to be running: a start that timed out may have
	// left a postmaster behind.
	out, err := c.run(c.pgCtl, "stop", "-D", c.data, "-m", "immediate", "-w", "-t", strconv.Itoa(pgCtlTimeout), "-s")
	if err != nil && c.running {
		fmt.Fprintf(os.Stderr, "pgtest: pg_ctl stop -m immediate: %v\n%s", err, out)
	}
	c.running = false
	c.gen.Add(1)
	c.mu.Unlock()
	if err := os.RemoveAll(c.dir); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: remove %s: %v\n", c.dir, err)
	}
	c.stopWatchdog()
}

// stopWatchdog lets the watchdog run (it finds nothing left to do) and waits
// for it, so that it cannot outlive this run.
func (c *Cluster) stopWatchdog() {
	if c.watchdog == nil {
		return
	}
	_ = c.watchdog.Close()
	c.watchdog = nil
	select {
	case <-c.watchdogDone:
	case <-time.After(30 * time.Second):
	}
}

func (c *Cluster) logTail() string { return tail(c.logFile) }

// tail returns the last 4 KiB of the log file at path, headed by its name,
// for error messages; "" when there is nothing to show.
func tail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 4096
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		_, _ = f.Seek(-max, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	if len(b) == 0 {
		return ""
	}
	return fmt.Sprintf("\n--- tail of %s ---\n%s", path, b)
}

// run runs a PostgreSQL binary (as the postgres OS user when we are root) and
// returns its combined output.
func (c *Cluster) run(bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = c.dir
	cmd.Env = childEnv()
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.WaitDelay = 5 * time.Second // in case the postmaster kept our pipe
	if c.cred != nil {
		runAs(cmd, c.cred)
	}
	err := cmd.Run()
	return out.String(), err
}

// childEnv is our environment without PG* variables (PGDATA, PGPORT,
// PGOPTIONS, ... would change what initdb/pg_ctl/postgres do).
func childEnv() []string {
	env := os.Environ()
	return slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PG") })
}

type osUser struct {
	name     string
	uid, gid uint32
}

func startCluster() (*Cluster, error) {
	c := &Cluster{}
	var err error
	if c.initdb, c.pgCtl, c.postgres, err = findBinaries(); err != nil {
		return nil, err
	}

	base := os.TempDir()
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, unavailable("running as root, which PostgreSQL refuses, and there is no OS user \"postgres\" to run it as (%v); "+
				"create one (useradd --system --no-create-home postgres), run the tests as an ordinary user, or set %s", err, EnvDatabaseURL)
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			return nil, unavailable("OS user postgres has a non-numeric uid/gid %q/%q", u.Uid, u.Gid)
		}
		c.cred = &osUser{name: "postgres", uid: uint32(uid), gid: uint32(gid)}
		base = "/tmp" // TMPDIR may be inside a directory the postgres user cannot enter
	}
	// The socket path (dir + "/.s.PGSQL.5432") must stay below ~107 bytes.
	if len(base) > 60 {
		base = "/tmp"
	}
	if c.dir, err = os.MkdirTemp(base, "pgtest-"); err != nil {
		return nil, unavailable("create temporary directory: %v", err)
	}
	if c.dir, err = filepath.Abs(c.dir); err != nil {
		return nil, unavailable("temporary directory: %v", err)
	}
	ok := false
	defer func() {
		if !ok {
			c.destroy()
		}
	}()
	if c.cred != nil {
		if err := os.Chown(c.dir, int(c.cred.uid), int(c.cred.gid)); err != nil {
			return nil, unavailable("chown %s to postgres: %v", c.dir, err)
		}
	}
	// Best effort: without the watchdog only Main cleans up.
	if c.watchdog, c.watchdogDone, err = startWatchdog(c); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: cannot start cleanup watchdog (a crashed test binary will leave %s behind): %v\n", c.dir, err)
	}
	c.data = filepath.Join(c.dir, "data")
	c.logFile = filepath.Join(c.dir, "postgres.log")
	// The server also listens on a free loopback port, for tests of what a
	// TCP connection does that a socket does not (see Cluster.TCP). The
	// unix socket takes the same number in its file name.
	if err := c.pickPort(); err != nil {
		return nil, err
	}

	if out, err := c.run(c.initdb, "-D", c.data, "-U", "postgres", "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-sync"); err != nil {
		return nil, unavailable("initdb (%s) failed: %v\n%s", c.initdb, err, out)
	}
	conf := fmt.Sprintf(`
# pgtest: throwaway test cluster
listen_addresses = '127.0.0.1'
unix_socket_directories = '%s'
# port: given to each start (pg_ctl start -o "-p N"), see Cluster.pgCtlStart
max_connections = 300
shared_buffers = 32MB
fsync = off
full_page_writes = off
# synchronous_commit stays on: with fsync=off a commit costs only a write(),
# and Cluster.Kill must not lose commits that were acknowledged.
synchronous_commit = on
`, strings.ReplaceAll(c.dir, "'", "''"))
	f, err := os.OpenFile(filepath.Join(c.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, unavailable("configure cluster: %v", err)
	}
	_, err = f.WriteString(conf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, unavailable("configure cluster: %v", err)
	}
	// The port was free when it was picked, before initdb; another process
	// (another test binary starting its cluster, any listener) may have
	// taken it since. Then the server cannot bind it: start on another.
	for attempt := 1; ; attempt++ {
		logged := fileSize(c.logFile)
		err := c.pgCtlStart()
		if err == nil {
			break
		}
		if attempt == maxPortAttempts || !c.portTaken(logged) {
			return nil, unavailable("%v", err)
		}
		if err := c.pickPort(); err != nil {
			return nil, err
		}
	}
	c.running = true
	ok = true
	return c, nil
}

// findBinaries returns the paths of initdb, pg_ctl and postgres, all from the
// same installation.
func findBinaries() (initdb, pgCtl, postgres string, err error) {
	names := []string{"initdb", "pg_ctl", "postgres"}
	inDir := func(dir string) ([]string, bool) {
		var paths []string
		for _, n := range names {
			p := filepath.Join(dir, n)
			if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
				return nil, false
			}
			paths = append(paths, p)
		}
		return paths, true
	}

	if dir := os.Getenv(EnvBinDir); dir != "" {
		if p, ok := inDir(dir); ok {
			return p[0], p[1], p[2], nil
		}
		return "", "", "", unavailable("%s=%s does not contain initdb, pg_ctl and postgres", EnvBinDir, dir)
	}

	// PATH: take the directory pg_ctl really lives in (resolving symlinks,
	// e.g. /usr/local/bin/pg_ctl -> /usr/lib/postgresql/15/bin/pg_ctl), so
	// that all three come from one installation.
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			if paths, ok := inDir(filepath.Dir(real)); ok {
				return paths[0], paths[1], paths[2], nil
			}
		}
		if paths, ok := inDir(filepath.Dir(p)); ok {
			return paths[0], paths[1], paths[2], nil
		}
	}

	// Debian/Ubuntu: /usr/lib/postgresql/<version>/bin, newest first.
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		return versionLess(filepath.Base(filepath.Dir(dirs[j])), filepath.Base(filepath.Dir(dirs[i])))
	})
	for _, dir := range dirs {
		if paths, ok := inDir(dir); ok {
			return paths[0], paths[1], paths[2], nil
		}
	}
	return "", "", "", unavailable("PostgreSQL server binaries (initdb, pg_ctl, postgres) not found on PATH or in /usr/lib/postgresql/*/bin")
}

// versionLess compares dotted versions such as "9.6" and "15" numerically.
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return a < b
}
