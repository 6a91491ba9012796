package idempotency_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func (c *commitSwallowedConn) Read(b []byte) (int, error) {
	if c.swallowed.Load() {
		return 0, &net.OpError{Op: "read", Net: "tcp", Addr: c.RemoteAddr(), Err: os.NewSyscallError("read", syscall.ETIMEDOUT)}
	}
	return c.Conn.Read(b)
}

func (c *commitSwallowedConn) Close() error {
	if c.swallowed.Load() {
		return nil // held open for the server until the test ends
	}
	return c.Conn.Close()
}

// wrap is a commitSwallowedConn of conn on n.
func (n *blackholeNet) wrap(conn net.Conn) net.Conn { return &commitSwallowedConn{Conn: conn, net: n} }

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
		open func(t *testing.T, configure func(*pgxpool.Config)) (*pgxpool.Pool, string)
	}{
		{"PostgreSQL", func(t *testing.T, configure func(*pgxpool.Config)) (*pgxpool.Pool, string) {
			db := pgtest.NewWithConfig(t, configure)
			return db.Pool, db.Schema
		}},
		{"PgBouncer", func(t *testing.T, configure func(*pgxpool.Config)) (*pgxpool.Pool, string) {
			db := pgtest.PgBouncer(t).New(t, configure)
			return db.Pool, db.Schema
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			n := newBlackholeNet(t)
			pool, schema := tc.open(t, dialWrapped(n.wrap))
			store := blackholeStore(t, pool, schema)
			paidTable := quoteIdent(schema) + ".paid"
			_, err := pool.Exec(ctx, `CREATE TABLE `+paidTable+` (invoice text)`)
			require.NoError(t, err)
			var pid uint32 // the server session of the first delivery
			h, results := reportingHandler(t, store, func(ctx context.Context, tx idempotency.Tx) error {
				var backend uint32
				err := idempotency.PgxTx(tx).QueryRow(ctx, `INSERT INTO `+paidTable+` VALUES ('in_sync_commit_never_arrived')
RETURNING pg_backend_pid()`).Scan(&backend)
				if pid == 0 {
					pid = backend
					n.armed.Store(true)
				}
				return err
			})
			payload := invoicePayload(t, "evt_sync_commit_never_arrived", "in_sync_commit_never_arrived", "acct_1")
			deliver := func() <-chan idempotencytest.Answer {
				answered := make(chan idempotencytest.Answer, 1)
				go func() { answered <- idempotencytest.Deliver(h, payload, testSecret) }()
				return answered
			}

			a := recv(t, deliver(), "the delivery whose COMMIT never arrived answered")
			require.Equal(t, 503, a.Status, a.Body)
			requireSwallowedSessionGone(t, pool, n, pid)
			_, found, err := store.LookupEvent(ctx, "evt_sync_commit_never_arrived")
			require.NoError(t, err)
			require.False(t, found, "the COMMIT never arrived: nothing was claimed")

			again := recv(t, deliver(), "Stripe's resend answered")
			require.Equal(t, 200, again.Status, again.Body)
			require.Equal(t, idempotency.OutcomeProcessed, again.Outcome)
			var paid int
			require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM `+paidTable).Scan(&paid))
			require.Equal(t, 1, paid, "applied once, by the resend")
			requireReported(t, results(), idempotency.OutcomeUnavailable, idempotency.OutcomeProcessed)
		})
	}
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
