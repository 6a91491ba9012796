package idempotency_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// armedAtFirstClaimsBatch is a tracer that arms armed once a prune's
// first batch of claims deleted them (its COMMIT is the next statement),
// and lookedUp, closed once the store looked a transaction up.
func armedAtFirstClaimsBatch() (armed *atomic.Bool, tracer queryEndTracer, lookedUp <-chan struct{}) {
	armed = &atomic.Bool{}
	var arm sync.Once
	tracer, lookedUp = lookUpCloses(func(sql string) {
		if strings.HasPrefix(sql, "DELETE FROM") && strings.Contains(sql, "idempotency_events") {
			arm.Do(func() { armed.Store(true) })
		}
	})
	return armed, tracer, lookedUp
}

// TestPgxPruneCommitInProgressCounted: the COMMIT of a prune's first batch
// of claims reached PostgreSQL and its answer was lost, and the batch's
// transaction was still in progress when the store first looked it up
// (its COMMIT held by a deferred constraint trigger that waits for a lock,
// as one waiting for synchronous replication is held); it committed just
// after. The store waits for the transaction's end: the batch is counted,
// the prune goes on to the next batch, and it reports every claim it
// deleted, without an error.
func TestPgxPruneCommitInProgressCounted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	armed, tracer, lookedUp := armedAtFirstClaimsBatch()
	db := newCommitCutDB(t, armed, tracer)
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(ctx))
	h, _ := reportingHandler(t, store, func(context.Context, idempotency.Tx) error { return nil })
	const claims = 6
	for i := range claims {
		id := fmt.Sprintf("evt_prune_in_progress_%d", i)
		a := idempotencytest.Deliver(h, invoicePayload(t, id, fmt.Sprintf("in_prune_in_progress_%d", i), "acct_1"), testSecret)
		require.Equal(t, 200, a.Status, a.Body)
	}
	_, err = db.Pool.Exec(ctx, `UPDATE `+quoteIdent(db.Schema)+`.idempotency_events SET processed_at = processed_at - interval '60 days'`)
	require.NoError(t, err)
	gate := newTriggerGate(t, db, "DELETE", "idempotency_events", "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW")

	type pruned struct {
		rep idempotency.PruneReport
		err error
	}
	done := make(chan pruned, 1)
	go func() {
		rep, err := store.Prune(ctx, idempotency.Retention{BatchSize: 4, Pause: -1})
		done <- pruned{rep, err}
	}()
	p := openWhenLookedUp(t, gate, lookedUp, done)
	require.False(t, armed.Load(), "the first batch's COMMIT was sent and its answer lost")
	select {
	case <-lookedUp:
	default:
		t.Fatal("the first batch was not looked up")
	}
	require.NoError(t, p.err)
	require.Equal(t, claims, p.rep.EventIDs, "every claim deleted is reported, the first batch's once")
	var left int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM `+quoteIdent(db.Schema)+`.idempotency_events`).Scan(&left))
	require.Zero(t, left)
}

// commitPoolerConn, once armed, sends the next COMMIT and answers it, in
// place of the server, with the FATAL error a connection pooler sends
// when it loses its server connection (08006), while the server's
// session goes on carrying the COMMIT out.
type commitPoolerConn struct {
	net.Conn
	armed *atomic.Bool
	cut   atomic.Bool
	fatal sync.Once
}

func (c *commitPoolerConn) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("commit")) && c.armed.CompareAndSwap(true, false) {
		n, err := c.Conn.Write(b)
		c.cut.Store(true)
		// pgx may have begun reading the answer before the COMMIT was
		// written (its background reader, started against a write that
		// could block): that read waits on the server, which holds the
		// COMMIT, and would wait for ever. Its deadline ends it, and it
		// then reads the pooler's error.
		_ = c.Conn.SetReadDeadline(time.Now())
		return n, err
	}
	return c.Conn.Write(b)
}

func (c *commitPoolerConn) Read(b []byte) (n int, err error) {
	if !c.cut.Load() {
		n, err = c.Conn.Read(b)
		if n > 0 || !c.cut.Load() {
			return n, err
		}
	}
	err = io.EOF
	c.fatal.Do(func() {
		var fatal []byte
		fatal, err = (&pgproto3.ErrorResponse{
			Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "08006", Message: "server conn crashed?",
		}).Encode(nil)
		n = copy(b, fatal)
	})
	return n, err
}

// TestPgxPruneCommitStillInProgressReported: as in
// TestPgxPruneCommitInProgressCounted, the COMMIT of a prune's first
// batch reached PostgreSQL and its answer was lost (a connection pooler
// in between lost its server connection),
// but the batch's
// transaction is still in progress when the store gives up looking it up
// (5 seconds; 10 s here: a look-up must see it in progress within it,
// which a loaded machine's first look-up may not do within a second). The
// prune stops there and says so: its error
// wraps ErrStoreUnavailable, as a failed COMMIT's does, and says the
// batch's transaction was still in progress; it is not ErrPruneRunning,
// which PruneEvery takes for another replica's prune and logs at Debug
// only. The batch was run again, found its own transaction holding the
// prune lock, and reported another prune running. Once that transaction
// ends the batch's claims are deleted, left out of the report.
func TestPgxPruneCommitStillInProgressReported(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	armed, tracer, lookedUp := armedAtFirstClaimsBatch()
	db := wrappedConnsDB(t, func(conn net.Conn) net.Conn { return &commitPoolerConn{Conn: conn, armed: armed} },
		func(c *pgxpool.Config) { c.ConnConfig.Tracer = tracer })
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(ctx))
	idempotency.SetPgxLostCommitWait(store, 10*time.Second)
	_, err = db.Pool.Exec(ctx, `INSERT INTO idempotency_events (event_id, event_type, outcome, received_at, processed_at)
SELECT 'evt_prune_still_' || i, 'invoice.paid', 'processed', now() - interval '60 days', now() - interval '60 days'
FROM generate_series(1, 6) AS i`)
	require.NoError(t, err)
	gate := newTriggerGate(t, db, "DELETE", "idempotency_events", "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW")

	// Two idle connections beside the gate's, one for the prune and one
	// for its look-up: a connection opened on a loaded machine takes
	// seconds of the look-up's wait.
	var conns [2]*pgxpool.Conn
	for i := range conns {
		conns[i], err = db.Pool.Acquire(ctx)
		require.NoError(t, err)
	}
	for _, c := range conns {
		c.Release()
	}
	rep, err := store.Prune(ctx, idempotency.Retention{BatchSize: 4, Pause: -1})
	select {
	case <-lookedUp:
	default:
		gate.open(t)
		t.Fatalf("the batch's transaction was not looked up; the prune returned %v", err)
	}
	gate.open(t)
	t.Logf("prune: %v", err)
	require.NotErrorIs(t, err, idempotency.ErrPruneRunning, "its own batch, not another prune")
	require.ErrorIs(t, err, idempotency.ErrStoreUnavailable)
	require.ErrorContains(t, err, "still in progress")
	require.Zero(t, rep.EventIDs, "the batch still in progress is left out of the report")
	faultAwait(t, 10*time.Second, "the batch committed once the gate opened", func() bool {
		var left int
		return db.Pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_events`).Scan(&left) == nil && left == 2
	})
}
