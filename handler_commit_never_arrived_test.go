package idempotency_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// commitSwallowedConn is a connection to PostgreSQL on a network path
// that, once armed, drops every packet from the next COMMIT on, without a
// reset: the COMMIT and what follows it are sent as far as the client can
// tell (into the kernel) and never arrive, and the read of its answer
// fails as a TCP user timeout fails it. The server, which hears nothing,
// keeps the session idle in transaction: its socket stays open until the
// test ends (held). A cancel request sent meanwhile fails, its path down.
type commitSwallowedConn struct {
	net.Conn
	net       *blackholeNet
	swallowed atomic.Bool
}

// blackholeNet is the state the commitSwallowedConns of a test share:
// armed, the next COMMIT is swallowed; cut, one was (cancel requests
// fail since); held, the connections that swallowed one.
type blackholeNet struct {
	armed, cut atomic.Bool
	mu         sync.Mutex
	held       []net.Conn
}

// newBlackholeNet is a blackholeNet whose held connections are closed
// when the test ends.
func newBlackholeNet(t *testing.T) *blackholeNet {
	n := &blackholeNet{}
	t.Cleanup(func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		for _, c := range n.held {
			_ = c.Close()
		}
	})
	return n
}

func (c *commitSwallowedConn) Write(b []byte) (int, error) {
	switch {
	case c.swallowed.Load():
		return len(b), nil
	case c.net.cut.Load() && isCancelRequest(b):
		return 0, net.ErrClosed
	case bytes.Contains(b, []byte("commit")) && c.net.armed.CompareAndSwap(true, false):
		c.net.mu.Lock()
		c.net.held = append(c.net.held, c.Conn)
		c.net.mu.Unlock()
		c.swallowed.Store(true)
		c.net.cut.Store(true)
		// pgx may have begun reading the answer before the COMMIT was
		// written (its background reader, started against a write that
		// could block): that read, on the socket, would wait for ever on
		// a server that hears nothing. Its deadline ends it, and it then
		// fails as every read does from here on.
		_ = c.Conn.SetReadDeadline(time.Now())
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func (c *commitSwallowedConn) Read(b []byte) (int, error) {
	if !c.swallowed.Load() {
		n, err := c.Conn.Read(b)
		if n > 0 || !c.swallowed.Load() {
			return n, err
		}
	}
	return 0, &net.OpError{Op: "read", Net: "tcp", Addr: c.RemoteAddr(), Err: os.NewSyscallError("read", syscall.ETIMEDOUT)}
}

// SetDeadline and SetReadDeadline leave the past read deadline of a
// connection that swallowed a COMMIT as it is: a read begun before must
// end. One that pgx (cancelling a query) set just before the swallow
// may still overwrite it, with a deadline that is near as well: pgx's
// DeadlineDelay, 0 unless a test sets it, which none of those that
// swallow a COMMIT does.
func (c *commitSwallowedConn) SetDeadline(t time.Time) error {
	if c.swallowed.Load() {
		return nil
	}
	return c.Conn.SetDeadline(t)
}

func (c *commitSwallowedConn) SetReadDeadline(t time.Time) error {
	if c.swallowed.Load() {
		return nil
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *commitSwallowedConn) Close() error {
	if c.swallowed.Load() {
		return nil // held open for the server until the test ends
	}
	return c.Conn.Close()
}

// wrap is a commitSwallowedConn of conn on n.
func (n *blackholeNet) wrap(conn net.Conn) net.Conn { return &commitSwallowedConn{Conn: conn, net: n} }

// readEntered is a net.Conn that closes entered as its first Read begins.
type readEntered struct {
	net.Conn
	once    sync.Once
	entered chan struct{}
}

func (c *readEntered) Read(b []byte) (int, error) {
	c.once.Do(func() { close(c.entered) })
	return c.Conn.Read(b)
}

// TestCommitSwallowedConnEndsAReadBegunBefore: pgx's background reader
// may begin reading a COMMIT's answer before the COMMIT is written (when
// the write has not returned 15 ms after pgx began it, as on a loaded
// machine). Once the COMMIT is swallowed, that read fails as a TCP user
// timeout fails it, as every later read does. It waited instead on a
// server that hears nothing, and kept a delivery of
// TestHandlerCommitNeverArrivedAnsweredAtOnce waiting past the test's
// 30 s in CI.
func TestCommitSwallowedConnEndsAReadBegunBefore(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		if server, err := ln.Accept(); err == nil {
			accepted <- server
		}
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	server := recv(t, accepted, "the listener accepted the connection")
	t.Cleanup(func() { _ = server.Close() }) // it never answers

	n := newBlackholeNet(t)
	inner := &readEntered{Conn: client, entered: make(chan struct{})}
	conn := n.wrap(inner)
	read := make(chan error, 1)
	go func() {
		_, err := conn.Read(make([]byte, 64))
		read <- err
	}()
	recv(t, inner.entered, "the read began")
	n.armed.Store(true)
	_, err = conn.Write([]byte("Q\x00\x00\x00\x0bcommit\x00"))
	require.NoError(t, err)
	require.True(t, n.cut.Load(), "the COMMIT was swallowed")
	require.ErrorIs(t, recvWithin(t, read, 5*time.Second, "the read begun before the COMMIT ended"), syscall.ETIMEDOUT)
	_, err = conn.Read(make([]byte, 64))
	require.ErrorIs(t, err, syscall.ETIMEDOUT, "and so does every read after it")
}

// armAfter is a pgx tracer that, once the first statement whose SQL
// match accepts has been answered, arms its blackholeNet and keeps the
// server pid of that statement's session (on a direct connection): the
// COMMIT that follows on it never arrives.
type armAfter struct {
	net   *blackholeNet
	match func(sql string) bool
	once  sync.Once
	pid   atomic.Uint32
}

func (a *armAfter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, tracedSQL{}, d.SQL)
}

func (a *armAfter) TraceQueryEnd(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryEndData) {
	if sql, _ := ctx.Value(tracedSQL{}).(string); d.Err == nil && a.match(sql) {
		a.once.Do(func() {
			a.pid.Store(conn.PgConn().PID())
			a.net.armed.Store(true)
		})
	}
}

// blackholeStore is a store on pool, migrated in schema, whose look-ups
// of a lost COMMIT may last a minute.
func blackholeStore(t *testing.T, pool *pgxpool.Pool, schema string) *idempotency.PgxStore {
	t.Helper()
	store, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(t.Context()))
	idempotency.SetPgxLostCommitWait(store, time.Minute)
	return store
}

// requireSwallowedSessionGone requires a COMMIT to have been swallowed on
// n, and the server session pid it was sent to to be gone.
func requireSwallowedSessionGone(t *testing.T, pool *pgxpool.Pool, n *blackholeNet, pid uint32) {
	t.Helper()
	require.True(t, n.cut.Load(), "the COMMIT was swallowed")
	require.NotZero(t, pid)
	faultAwait(t, 10*time.Second, fmt.Sprintf("the session (pid %d) whose COMMIT never arrived is gone", pid), func() bool {
		var left int
		return pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, int64(pid)).Scan(&left) == nil && left == 0
	})
}

// TestHandlerCommitNeverArrivedAnsweredAtOnce: the COMMIT of an event's
// transaction never reached PostgreSQL (a network path that drops packets
// without a reset: the write went into the kernel, the read of the answer
// timed out), and the server, which has not noticed, keeps the session
// idle in transaction, holding the transaction and its row locks. The
// store looking the transaction up finds it in progress, with its session
// waiting for the client's next command: it ends that session, and the
// delivery is answered 503 at once, not after waiting out the look-ups'
// time (a minute here). Nothing was applied; Stripe's resend does not
// wait on the locks the session held and is processed, once. Behind
// PgBouncer in transaction mode the session is the server's, which
// PgBouncer kept for the lost client.
func TestHandlerCommitNeverArrivedAnsweredAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// open gives the pool, its schema, and what the failure message
		// adds: PgBouncer's log lines of the schema.
		open func(t *testing.T, configure func(*pgxpool.Config)) (*pgxpool.Pool, string, func() string)
	}{
		{"PostgreSQL", func(t *testing.T, configure func(*pgxpool.Config)) (*pgxpool.Pool, string, func() string) {
			db := pgtest.NewWithConfig(t, configure)
			return db.Pool, db.Schema, func() string { return "" }
		}},
		{"PgBouncer", func(t *testing.T, configure func(*pgxpool.Config)) (*pgxpool.Pool, string, func() string) {
			b := pgtest.PgBouncer(t)
			db := b.New(t, configure)
			return db.Pool, db.Schema, func() string { return bouncerLogOf(b, db.Schema) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			n := newBlackholeNet(t)
			pool, schema, log := tc.open(t, dialWrapped(n.wrap))
			store := blackholeStore(t, pool, schema)
			paidTable := quoteIdent(schema) + ".paid"
			_, err := pool.Exec(ctx, `CREATE TABLE `+paidTable+` (invoice text)`)
			require.NoError(t, err)
			d := newNeverArrived(t, store, n, paidTable, "evt_sync_commit_never_arrived", "in_sync_commit_never_arrived")

			a := recv(t, d.deliver(), "the delivery whose COMMIT never arrived answered")
			require.Equal(t, 503, a.Status, "%s: %v%s", a.Body, d.results(), log())
			requireSwallowedSessionGone(t, pool, n, d.pid)
			_, found, err := store.LookupEvent(ctx, "evt_sync_commit_never_arrived")
			require.NoError(t, err)
			require.False(t, found, "the COMMIT never arrived: nothing was claimed")

			d.requireResendProcessedOnce(t, pool)
		})
	}
}

// bouncerLogOf is the last lines of b's log that name schema, the
// PgBouncer database of a test's pool, for a failure message.
func bouncerLogOf(b *pgtest.Bouncer, schema string) string {
	data, err := os.ReadFile(b.LogFile())
	if err != nil {
		return "\nPgBouncer's log: " + err.Error()
	}
	var lines []string
	for line := range strings.Lines(string(data)) {
		if strings.Contains(line, schema) {
			lines = append(lines, line)
		}
	}
	return "\nPgBouncer's log of " + schema + ":\n" + strings.Join(lines[max(0, len(lines)-20):], "")
}

// neverArrived is a synchronous Handler on a store whose invoice.paid
// handler records its invoice in table and, at the first delivery, arms a
// blackholeNet and keeps the server pid of its session (pid): that
// delivery's COMMIT never arrives.
type neverArrived struct {
	table   string
	pid     uint32
	deliver func() <-chan idempotencytest.Answer // delivers the event, answered on the channel
	results func() map[string][]idempotency.Result
}

func newNeverArrived(t *testing.T, store *idempotency.PgxStore, n *blackholeNet, table, eventID, invoice string) *neverArrived {
	t.Helper()
	d := &neverArrived{table: table}
	var h http.Handler
	h, d.results = reportingHandler(t, store, func(ctx context.Context, tx idempotency.Tx) error {
		var backend uint32
		err := idempotency.PgxTx(tx).QueryRow(ctx, `INSERT INTO `+table+` VALUES ($1) RETURNING pg_backend_pid()`, invoice).Scan(&backend)
		if d.pid == 0 {
			d.pid = backend
			n.armed.Store(true)
		}
		return err
	})
	payload := invoicePayload(t, eventID, invoice, "acct_1")
	d.deliver = func() <-chan idempotencytest.Answer {
		answered := make(chan idempotencytest.Answer, 1)
		go func() { answered <- idempotencytest.Deliver(h, payload, testSecret) }()
		return answered
	}
	return d
}

// requireResendProcessedOnce requires Stripe's resend, after a first
// delivery answered 503, to be processed, and the invoice recorded once.
func (d *neverArrived) requireResendProcessedOnce(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	again := recv(t, d.deliver(), "Stripe's resend answered")
	require.Equal(t, 200, again.Status, again.Body)
	require.Equal(t, idempotency.OutcomeProcessed, again.Outcome)
	var paid int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM `+d.table).Scan(&paid))
	require.Equal(t, 1, paid, "applied once, by the resend")
	requireReported(t, d.results(), idempotency.OutcomeUnavailable, idempotency.OutcomeProcessed)
}

// TestPgxPruneCommitNeverArrivedSettled: as in
// TestHandlerCommitNeverArrivedAnsweredAtOnce, the COMMIT of a prune's
// first batch of claims never reached PostgreSQL, whose session sits idle
// in transaction. The store ends that session: the batch rolled back, and
// the prune fails at once with ErrStoreUnavailable, not after the
// look-ups' time (a minute here) with the batch still in progress. The
// next prune deletes every claim and reports them.
func TestPgxPruneCommitNeverArrivedSettled(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	arm := &armAfter{net: newBlackholeNet(t), match: func(sql string) bool {
		return strings.HasPrefix(sql, "DELETE FROM") && strings.Contains(sql, "idempotency_events")
	}}
	db := wrappedConnsDB(t, arm.net.wrap, func(c *pgxpool.Config) { c.ConnConfig.Tracer = arm })
	store := blackholeStore(t, db.Pool, db.Schema)
	_, err := db.Pool.Exec(ctx, `INSERT INTO idempotency_events (event_id, event_type, outcome, received_at, processed_at)
SELECT 'evt_prune_never_arrived_' || i, 'invoice.paid', 'processed', now() - interval '60 days', now() - interval '60 days'
FROM generate_series(1, 6) AS i`)
	require.NoError(t, err)
	type pruned struct {
		rep idempotency.PruneReport
		err error
	}
	prune := func() <-chan pruned {
		done := make(chan pruned, 1)
		go func() {
			rep, err := store.Prune(ctx, idempotency.Retention{BatchSize: 4, Pause: -1})
			done <- pruned{rep, err}
		}()
		return done
	}

	p := recv(t, prune(), "the prune whose batch's COMMIT never arrived returned")
	t.Logf("prune: %v", p.err)
	require.ErrorIs(t, p.err, idempotency.ErrStoreUnavailable)
	require.NotContains(t, p.err.Error(), "still in progress")
	require.Zero(t, p.rep.EventIDs)
	requireSwallowedSessionGone(t, db.Pool, arm.net, arm.pid.Load())

	p = recv(t, prune(), "the next prune returned")
	require.NoError(t, p.err)
	require.Equal(t, 6, p.rep.EventIDs, "the first batch rolled back: every claim deleted by the next prune")
}

// signalRefusals is a pgx tracer that keeps the errors of the statements
// that call pg_terminate_backend.
type signalRefusals struct {
	mu   sync.Mutex
	errs []error
}

func (s *signalRefusals) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, tracedSQL{}, d.SQL)
}

func (s *signalRefusals) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	if sql, _ := ctx.Value(tracedSQL{}).(string); strings.Contains(sql, "pg_terminate_backend") {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.errs = append(s.errs, d.Err)
	}
}

func (s *signalRefusals) all() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.errs)
}

// TestHandlerCommitNeverArrivedHolderNotEnded: as in
// TestHandlerCommitNeverArrivedAnsweredAtOnce, the COMMIT of an event's
// transaction never reached PostgreSQL, whose session sits idle in
// transaction; but the store's role may not end that session. The
// session that holds the transaction logged in as a superuser, and the
// store's other connections as a role that reads every session's activity
// (pg_read_all_stats), is no superuser and has no pg_signal_backend: the
// store's pg_terminate_backend is refused (insufficient privilege). The
// refusal is ignored and the look-ups go on, finding the transaction in
// progress until their time is up (10 s here, 5 s by default): the delivery
// is answered 503 and reported unavailable, once, with an error wrapping
// ErrStoreUnavailable that names nothing of the look-ups, and every
// connection is given back to the pool. The session is left idle in
// transaction, holding its locks; once it is ended, Stripe's resend is
// processed, once.
func TestHandlerCommitNeverArrivedHolderNotEnded(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := pgtest.New(t)
	owner, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, owner.Migrate(ctx))
	_, err = db.Pool.Exec(ctx, `CREATE TABLE paid (invoice text)`)
	require.NoError(t, err)
	var superuser string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT current_user FROM pg_roles WHERE rolname = current_user AND rolsuper`).Scan(&superuser),
		"the test's connections log in as a superuser")

	admin := pgtest.AdminPool(t)
	role := appRole(t, admin, db, "_lookups", "pg_read_all_stats")

	// The pool's first connection, the one the delivery's transaction
	// runs on, logs in as the superuser; the others as role.
	n := newBlackholeNet(t)
	refusals := &signalRefusals{}
	cfg, err := pgxpool.ParseConfig(db.URL)
	require.NoError(t, err)
	dialWrapped(n.wrap)(cfg)
	cfg.ConnConfig.Tracer = refusals
	var connects atomic.Int32
	cfg.BeforeConnect = func(_ context.Context, c *pgx.ConnConfig) error {
		if connects.Add(1) > 1 {
			c.User = role
		}
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	// The attempt to end the session comes 500 ms into the look-ups, on a
	// connection the pool dials for it then, and must come before they
	// end: 1 s left it little room on a loaded machine.
	const lookUps = 10 * time.Second
	idempotency.SetPgxLostCommitWait(store, lookUps)

	d := newNeverArrived(t, store, n, quoteIdent(db.Schema)+".paid", "evt_sync_holder_not_ended", "in_sync_holder_not_ended")

	start := time.Now()
	a := recv(t, d.deliver(), "the delivery whose COMMIT never arrived answered")
	took := time.Since(start)
	require.Equal(t, 503, a.Status, a.Body)
	require.True(t, n.cut.Load(), "the COMMIT was swallowed")
	require.GreaterOrEqual(t, took, lookUps, "answered before the look-ups' time was up: the session was not ended")
	var holder, state string
	require.NoError(t, admin.QueryRow(ctx, `SELECT usename, state FROM pg_stat_activity WHERE pid = $1`, int64(d.pid)).Scan(&holder, &state))
	require.Equal(t, superuser, holder, "the transaction's session logged in as the superuser")
	require.Equal(t, "idle in transaction", state, "the session the store could not end")
	tried := refusals.all()
	require.Len(t, tried, 1, "the store tried to end the session once")
	var pgErr *pgconn.PgError
	require.ErrorAs(t, tried[0], &pgErr, "refused")
	require.Equal(t, "42501", pgErr.Code, "refused for want of privilege: %v", pgErr)

	got := d.results()
	requireReported(t, got, idempotency.OutcomeUnavailable)
	t.Logf("reported: %v", got["OnResult"][0].Err)
	for _, rs := range got {
		require.ErrorIs(t, rs[0].Err, idempotency.ErrStoreUnavailable)
		for _, internal := range []string{"pg_terminate_backend", "pg_stat_activity", "txid", "superuser", "SELECT", "42501"} {
			require.NotContains(t, rs[0].Err.Error(), internal)
		}
	}
	// A connection left in a transaction is destroyed, not put back, and
	// pgxpool counts it acquired until its own goroutine has closed it: a
	// leak would hold the count at 1.
	require.Eventually(t, func() bool { return pool.Stat().AcquiredConns() == 0 }, 10*time.Second, 5*time.Millisecond,
		"every connection given back to the pool: acquired %d", pool.Stat().AcquiredConns())
	_, found, err := store.LookupEvent(ctx, "evt_sync_holder_not_ended")
	require.NoError(t, err)
	require.False(t, found, "the transaction is in progress: nothing claimed")

	// An operator ends the session: the transaction rolls back, and
	// Stripe's resend is processed, once.
	_, err = admin.Exec(ctx, `SELECT pg_terminate_backend($1)`, int64(d.pid))
	require.NoError(t, err)
	requireSwallowedSessionGone(t, admin, n, d.pid)
	d.requireResendProcessedOnce(t, db.Pool)
}
