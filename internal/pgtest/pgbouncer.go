package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed-a84bb619/idempotency/internal/ci"
)

// BouncerPoolSize is how many server connections PgBouncer opens, at most,
// for one [BouncerDB]: the pool behind the test's clients. It is small next
// to a test's client pools, so that every transaction may land on another
// server connection than its client's previous one, as in production. It
// is as large as the store conformance suite needs without its in-process
// memory of claims: a claim held while five copies wait on it in
// PostgreSQL, six server connections.
const BouncerPoolSize = 8

// Bouncer is a PgBouncer in transaction pooling mode in front of the
// throwaway cluster, shared by the tests of one binary and stopped by
// [Main] (or by the watchdog, if the binary dies first); a program's own,
// in front of its [StartCluster], comes from [Cluster.StartBouncer]. It
// listens on a free port of 127.0.0.1 and lets in the cluster's user
// "postgres" without a password. Every [BouncerDB] is a database of its
// own to PgBouncer (the database name is the schema's; all of them lead
// to the server's database "postgres"), so each test has its own pool of at most [BouncerPoolSize]
// server connections and tests never wait for each other's.
//
// PgBouncer in transaction pooling mode gives a client a server connection
// for one transaction at a time: session state (SET, LISTEN, session
// advisory locks, named prepared statements) does not survive the
// transaction. PgBouncer before 1.21 (Debian 12 ships 1.18) does not track
// prepared statements either, so pgx's default query mode, which prepares
// and caches named statements per connection, fails through it; a
// BouncerDB's pool uses [pgx.QueryExecModeExec]. PgBouncer refuses startup
// parameters it does not track, such as "options": a BouncerDB has no
// search_path, and tests qualify names with its schema.
type Bouncer struct {
	bin     string
	dir     string // the cluster's temporary directory; holds our files
	conf    string
	logFile string
	port    int
	cred    *osUser // the cluster's user, which PgBouncer runs as when the tests run as root; nil when not

	stdin *os.File        // the launcher's stdin; closing it stops PgBouncer
	done  <-chan struct{} // closed when the launcher (and PgBouncer) exited
}

var (
	bouncerOnce sync.Once
	bouncerSrv  *Bouncer
	bouncerErr  error
)

// PgBouncer returns the binary's PgBouncer, starting it on first use. It
// skips the test when IDEMPOTENCY_TEST_DATABASE_URL is set (PgBouncer runs
// only in front of the throwaway cluster, whose authentication it knows).
// When PgBouncer is not installed (Debian: apt install pgbouncer) or does
// not start, the test is skipped, or fails under CI=true, as for a missing
// PostgreSQL; the start is attempted once per binary.
func PgBouncer(t testing.TB) *Bouncer {
	t.Helper()
	s := shared(t)
	if s.cluster == nil {
		t.Skipf("pgtest: %s is set, so the tests use an external server; PgBouncer runs only in front of the throwaway cluster", EnvDatabaseURL)
	}
	bouncerOnce.Do(func() {
		begin := time.Now()
		bouncerSrv, bouncerErr = startBouncer(s.cluster, BouncerPoolSize, "")
		if bouncerErr == nil {
			t.Logf("pgtest: started PgBouncer (transaction pooling) on 127.0.0.1:%d in %s", bouncerSrv.port, time.Since(begin).Round(time.Millisecond))
			return
		}
		var ue *unavailableError
		if errors.As(bouncerErr, &ue) {
			what := "be SKIPPED"
			if ci.On() {
				what = "FAIL (CI=true)"
			}
			fmt.Fprintf(os.Stderr, "\n*** pgtest: PgBouncer is unavailable, PgBouncer tests will %s: %v\n*** %s\n\n", what, bouncerErr, howToGetBouncer())
		}
	})
	if bouncerErr != nil {
		var ue *unavailableError
		if errors.As(bouncerErr, &ue) && !ci.On() {
			t.Skipf("pgtest: SKIPPED, no PgBouncer: %v\n%s", bouncerErr, howToGetBouncer())
		}
		if errors.As(bouncerErr, &ue) {
			t.Fatalf("pgtest: no PgBouncer and CI=true: %v\n%s", bouncerErr, howToGetBouncer())
		}
		t.Fatalf("%v", bouncerErr)
	}
	return bouncerSrv
}

func howToGetBouncer() string {
	return "pgtest: to run the PgBouncer tests, install PgBouncer (Debian/Ubuntu: apt install pgbouncer; it is looked up on PATH and in /usr/sbin). " +
		"With CI=true these tests fail instead of skipping."
}

// BouncerDB is one test's private schema, reached through PgBouncer.
type BouncerDB struct {
	// Pool connects through PgBouncer with [pgx.QueryExecModeExec] and
	// application_name Schema. Its sessions have no search_path: qualify
	// every name with Schema (a store does it with its Schema setting). It
	// is closed when the test ends.
	Pool *pgxpool.Pool

	// Schema is the schema's name, as for [DB.Schema], and PgBouncer's
	// database name for this test's pool (with a suffix, from
	// [Bouncer.NewFrom]).
	Schema string

	// URL is Pool's connection string, default_query_exec_mode=exec
	// included, for a second pool in the same PgBouncer pool, as a second
	// process would open.
	URL string
}

// New gives the test a fresh, empty schema on the cluster, as [New] does,
// and a pool (MaxConns [DefaultMaxConns]) that reaches it through the
// bouncer; see [BouncerDB]. configure, if not nil, is called on the pool
// configuration before the pool is created; it must not change the host,
// port, user or database. When the test ends the pool is closed, the
// server connections PgBouncer holds for the test are closed, and the
// schema is dropped.
func (b *Bouncer) New(t testing.TB, configure func(*pgxpool.Config)) *BouncerDB {
	t.Helper()
	s := shared(t)
	// The server connections of the test's PgBouncer pool carry
	// application_name Schema, so dropSchema closes them: PgBouncer notices
	// and forgets them, and a finished test holds none of the cluster's
	// max_connections.
	plain := &DB{Schema: s.createSchema(t)}
	t.Cleanup(func() { s.dropSchema(t, plain) })
	return b.open(t, plain, plain.Schema, configure)
}

// NewFrom is [Bouncer.New], but the schema is one of tp's, prepared, as
// [Template.New] gives. When the test ends, PgBouncer's server sessions
// for it, all idle once its pool is closed, are kept (a PostgreSQL
// session costs a process) with the schema, under its PgBouncer database
// name, for the next test NewFrom gives the schema to; they count in the
// budget of kept sessions of [Template.NewPooled]. Otherwise, or once any
// other test had the schema, whose cleanup terminates them, the next test
// gets a new name (the schema's and a suffix): PgBouncer may not yet have
// seen the end of the sessions terminated under the old one. Server
// sessions under one name serve one test at a time, in transaction
// pooling as in production: session state a test left there (a SET,
// say) is not reset.
func (b *Bouncer) NewFrom(t testing.TB, tp *Template, configure func(*pgxpool.Config)) *BouncerDB {
	t.Helper()
	plain, _ := tp.take(t, shared(t), 0, b)
	return b.open(t, plain, plain.bouncerDB, configure)
}

// serverPIDs returns the process ids of the server sessions PgBouncer
// holds under database (SHOW SERVERS on its admin console), and whether
// every one of them is idle ("idle", or "used": idle, to be checked before
// its next use), none linked to a client.
func (b *Bouncer) serverPIDs(ctx context.Context, database string) (pids []int32, idle bool, err error) {
	cfg, err := pgx.ParseConfig(b.url("pgbouncer", "pgtest_admin"))
	if err != nil {
		return nil, false, err
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol // all the admin console speaks
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, false, err
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, "SHOW SERVERS")
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	col := map[string]int{}
	for i, f := range rows.FieldDescriptions() {
		col[f.Name] = i
	}
	for _, name := range []string{"database", "state", "link", "remote_pid"} {
		if _, ok := col[name]; !ok {
			return nil, false, fmt.Errorf("SHOW SERVERS has no column %s", name)
		}
	}
	idle = true
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			return nil, false, err
		}
		if fmt.Sprint(v[col["database"]]) != database {
			continue
		}
		pid, err := strconv.ParseInt(fmt.Sprint(v[col["remote_pid"]]), 10, 32)
		if err != nil {
			return nil, false, fmt.Errorf("SHOW SERVERS: remote_pid %v: %w", v[col["remote_pid"]], err)
		}
		pids = append(pids, int32(pid))
		if state := fmt.Sprint(v[col["state"]]); state != "idle" && state != "used" || v[col["link"]] != nil && fmt.Sprint(v[col["link"]]) != "" {
			idle = false
		}
	}
	return pids, idle, rows.Err()
}

// endBouncerSchema ends t's use of db's schema, reached through b under
// db.bouncerDB, as endSchema does, but keeps PgBouncer's server sessions
// under that name: once db.Pool is closed and every one of them is idle,
// and the budget of kept sessions has room for all of them (evict, called
// when it is short, may end sessions kept longer), it terminates every
// other session connected under the schema's name and calls keep with
// their process ids. It reports whether keep returned true, the sessions
// then counted in the budget until the schema is taken or evicted. When
// it returns false, the caller ends the schema as endSchema does.
func (s *server) endBouncerSchema(t testing.TB, db *DB, b *Bouncer, evict func(n int), keep func(ctx context.Context, idle []int32) bool) bool {
	if db.Pool == nil || db.Pool.Stat().AcquiredConns() != 0 {
		return false // endSchema waits for them, and says so
	}
	db.Pool.Close()
	if s.cluster != nil {
		s.cluster.ensureRunning(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	pids, idle, err := b.serverPIDs(ctx, db.bouncerDB)
	if err != nil || !idle || len(pids) == 0 {
		return false
	}
	if n := keepSessions(len(pids), evict); n < len(pids) {
		releaseSessions(n)
		return false
	}
	if err := s.terminateSessions(ctx, db.Schema, pids); err != nil || !keep(ctx, pids) {
		releaseSessions(len(pids))
		return false
	}
	return true
}

// open opens the pool of plain's schema through the bouncer, under
// PgBouncer's database name database, and sets plain.Pool to it, so that
// the test's cleanup closes it.
func (b *Bouncer) open(t testing.TB, plain *DB, database string, configure func(*pgxpool.Config)) *BouncerDB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	db := &BouncerDB{Schema: plain.Schema, URL: b.url(database, plain.Schema)}
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatalf("pgtest: parse connection string: %v", err)
	}
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	cfg.MaxConns = DefaultMaxConns
	if configure != nil {
		configure(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		t.Fatalf("pgtest: open pool for schema %s through PgBouncer: %v%s", plain.Schema, err, b.logTail())
	}
	plain.Pool, db.Pool = pool, pool
	return db
}

// url is the connection string of database (a schema's name, for
// [Bouncer.New]) through the bouncer, with application_name app.
func (b *Bouncer) url(database, app string) string {
	return (&url.URL{Scheme: "postgres", User: url.User("postgres"), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)),
		Path: "/" + database, RawQuery: encodeQuery(url.Values{
			"sslmode":                 {"disable"},
			"application_name":        {app},
			"default_query_exec_mode": {"exec"},
		})}).String()
}

// LogFile returns the path of PgBouncer's log, useful when a test fails.
func (b *Bouncer) LogFile() string { return b.logFile }

func (b *Bouncer) logTail() string { return tail(b.logFile) }

// findBouncer returns the path of the pgbouncer binary: on PATH, or where
// Debian's package puts it (/usr/sbin, often not on an ordinary user's
// PATH).
func findBouncer() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	const debian = "/usr/sbin/pgbouncer"
	if fi, err := os.Stat(debian); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		return debian, nil
	}
	return "", unavailable("pgbouncer not found on PATH or in /usr/sbin")
}

// bouncerLauncher runs PgBouncer ($0, config $1) and stops it (SIGTERM,
// PgBouncer's immediate shutdown) when its stdin reaches EOF: when Main
// closes it, or when the test binary exits in any way (also a panic, a
// -timeout or SIGKILL, when Main cannot). It exits when PgBouncer does, so
// that a PgBouncer that failed to start is noticed at once. The reader
// runs in the background, on a copy of stdin (an asynchronous list's own
// stdin is /dev/null), so that the shell can wait for PgBouncer.
const bouncerLauncher = `exec 3<&0 </dev/null
"$0" "$1" &
bouncer=$!
{ read _ignored <&3; kill -TERM "$bouncer" 2>/dev/null; } &
reader=$!
exec 3<&-
wait "$bouncer"
status=$?
kill "$reader" 2>/dev/null
exit "$status"`

// startBouncer starts a PgBouncer in transaction pooling mode in front of
// c, with poolSize server connections per database, and more settings of
// its [pgbouncer] section (lines; "" for none).
func startBouncer(c *Cluster, poolSize int, more string) (*Bouncer, error) {
	bin, err := findBouncer()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat("/bin/sh"); err != nil {
		return nil, unavailable("PgBouncer is started through /bin/sh: %v", err)
	}
	b := &Bouncer{
		bin:     bin,
		dir:     c.dir,
		conf:    filepath.Join(c.dir, "pgbouncer.ini"),
		logFile: filepath.Join(c.dir, "pgbouncer.log"),
	}
	users := filepath.Join(c.dir, "pgbouncer-users.txt")
	// With auth_type trust PgBouncer checks no password, but lets in only
	// the users its auth_file names. It logs in to the server as the same
	// user, which the cluster trusts on its socket.
	if err := os.WriteFile(users, []byte(`"postgres" ""`+"\n"), 0o644); err != nil {
		return nil, unavailable("write %s: %v", users, err)
	}
	b.cred = c.cred
	// The port was free when it was picked; another process (the
	// kernel's choice of a local port for an outgoing connection, another
	// binary's listener) may take it before PgBouncer binds it. Then it
	// starts on another, as the cluster does.
	for attempt := 1; ; attempt++ {
		if b.port, err = bouncerPort(); err != nil {
			return nil, unavailable("find a free loopback port for PgBouncer: %v", err)
		}
		if err := b.writeConf(c, users, poolSize, more); err != nil {
			return nil, err
		}
		logged := fileSize(b.logFile)
		err := b.launch()
		if err == nil {
			return b, nil
		}
		if attempt == maxPortAttempts || !logSays(b.logFile, logged, "cannot listen on", "Address already in use") {
			return nil, err
		}
	}
}

// bouncerPingTimeout bounds one of waitReady's pings; a test raises it.
var bouncerPingTimeout = 5 * time.Second

// bouncerPort picks PgBouncer's port; a test replaces it.
var bouncerPort = freeLoopbackPort

// writeConf writes b's configuration, on b.port, in front of c.
func (b *Bouncer) writeConf(c *Cluster, users string, poolSize int, more string) error {
	conf := fmt.Sprintf(`; pgtest: PgBouncer in front of the throwaway cluster
[databases]
; Every database name is a pool of its own (a test's schema), onto the
; server's database postgres.
* = host=%s port=%d dbname=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
admin_users = postgres
pool_mode = transaction
default_pool_size = %d
reserve_pool_size = 0
max_client_conn = 2000
; A pool whose test has ended is freed soon; its server connections are
; closed by the test's cleanup already.
autodb_idle_timeout = 30
server_idle_timeout = 30
log_connections = 0
log_disconnections = 0
%s`, quoteConnValue(c.dir), c.port, b.port, users, poolSize, more)
	if err := os.WriteFile(b.conf, []byte(conf), 0o644); err != nil {
		return unavailable("write %s: %v", b.conf, err)
	}
	return nil
}

// launch starts b's PgBouncer, as its cluster's user when the tests run
// as root, and returns once it serves a query.
func (b *Bouncer) launch() error {
	logf, err := os.OpenFile(b.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return unavailable("create %s: %v", b.logFile, err)
	}
	defer logf.Close() // the child has its own copy
	if b.cred != nil {
		// PgBouncer refuses to run as root: it runs as the cluster's user.
		if err := os.Chown(b.logFile, int(b.cred.uid), int(b.cred.gid)); err != nil {
			return unavailable("chown %s: %v", b.logFile, err)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return unavailable("pipe: %v", err)
	}
	defer r.Close()
	cmd := exec.Command("/bin/sh", "-c", bouncerLauncher, b.bin, b.conf)
	cmd.Dir = b.dir
	cmd.Env = childEnv()
	cmd.Stdin = r // *os.File: handed over as is, no copying goroutine
	cmd.Stdout, cmd.Stderr = logf, logf
	if b.cred != nil {
		runAs(cmd, b.cred)
	}
	if err := cmd.Start(); err != nil {
		w.Close()
		return unavailable("start %s: %v", b.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	b.stdin, b.done = w, done
	if err := b.waitReady(); err != nil {
		b.stop()
		return unavailable("%v%s", err, b.logTail())
	}
	return nil
}

// quoteConnValue quotes a value of a PgBouncer connection string.
func quoteConnValue(v string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), "'", `\'`) + "'"
}

// waitReady returns once PgBouncer serves a query on the server, or why
// it will not.
func (b *Bouncer) waitReady() error {
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-b.done:
			return fmt.Errorf("pgtest: %s exited at start", b.bin)
		default:
		}
		// A ping waits at most bouncerPingTimeout, and no longer than
		// PgBouncer runs: when it exits at start because another process
		// holds its port, a ping may wait on that process's listener.
		ctx, cancel := context.WithTimeout(context.Background(), bouncerPingTimeout)
		go func() {
			select {
			case <-b.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		last = b.ping(ctx)
		cancel()
		if last == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("pgtest: PgBouncer on 127.0.0.1:%d not ready after 30s: %v", b.port, last)
}

func (b *Bouncer) ping(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, b.url("postgres", "postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "SELECT 1")
	return err
}

// stop stops PgBouncer and waits until it has exited.
func (b *Bouncer) stop() {
	if b.stdin == nil {
		return
	}
	_ = b.stdin.Close()
	b.stdin = nil
	select {
	case <-b.done:
	case <-time.After(30 * time.Second):
		fmt.Fprintf(os.Stderr, "pgtest: PgBouncer did not stop within 30s\n")
	}
}

// stopBouncer stops the binary's PgBouncer, if it started one, and
// prevents any later start. Main calls it before it stops the cluster.
func stopBouncer() {
	bouncerOnce.Do(func() { bouncerErr = errClosed })
	if bouncerSrv != nil {
		bouncerSrv.stop()
	}
}
