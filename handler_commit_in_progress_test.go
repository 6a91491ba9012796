package idempotency_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// commitCutConn is a connection to PostgreSQL on a network that, once
// armed, is cut just after the next COMMIT went out: the server carries
// the COMMIT out (the bytes before the cut arrive), its answer is lost,
// and so is the cancel request pgx then sends for it (cut is set).
type commitCutConn struct {
	net.Conn
	armed, cut *atomic.Bool
}

func (c *commitCutConn) Write(b []byte) (int, error) {
	switch {
	case c.cut.Load() && isCancelRequest(b):
		_ = c.Conn.Close()
		return 0, net.ErrClosed
	case bytes.Contains(b, []byte("commit")) && c.armed.CompareAndSwap(true, false):
		n, err := c.Conn.Write(b)
		_ = c.Conn.Close()
		c.cut.Store(true)
		return n, err
	}
	return c.Conn.Write(b)
}

// isCancelRequest reports whether b is the protocol's CancelRequest: its
// length, then the request code 80877102.
func isCancelRequest(b []byte) bool {
	return len(b) >= 8 && binary.BigEndian.Uint32(b[4:8]) == 80877102
}

// queryEndTracer is a pgx tracer that is called with each statement's
// SQL once the statement has been answered.
type queryEndTracer func(sql string)

type tracedSQL struct{}

func (f queryEndTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, tracedSQL{}, d.SQL)
}

func (f queryEndTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	sql, _ := ctx.Value(tracedSQL{}).(string)
	f(sql)
}

// lookUpCloses returns a channel that tracer closes once the first
// statement that asks txid_status has been answered; tracer is called
// with every other statement.
func lookUpCloses(tracer func(sql string)) (queryEndTracer, <-chan struct{}) {
	lookedUp := make(chan struct{})
	var once sync.Once
	return func(sql string) {
		if strings.Contains(sql, "txid_status") {
			once.Do(func() { close(lookedUp) })
			return
		}
		tracer(sql)
	}, lookedUp
}

// newCommitCutDB is a test database whose pool's connections are
// commitCutConns, armed by armed, traced by tracer.
func newCommitCutDB(t *testing.T, armed *atomic.Bool, tracer pgx.QueryTracer) *pgtest.DB {
	t.Helper()
	var cut atomic.Bool
	return wrappedConnsDB(t, func(conn net.Conn) net.Conn {
		return &commitCutConn{Conn: conn, armed: armed, cut: &cut}
	}, func(c *pgxpool.Config) { c.ConnConfig.Tracer = tracer })
}

// openWhenLookedUp opens gate once the store looked the held transaction
// up (found in progress: let it commit), or once done answered, and
// returns done's answer.
func openWhenLookedUp[T any](t *testing.T, gate *commitGate, lookedUp <-chan struct{}, done <-chan T) T {
	t.Helper()
	select {
	case <-lookedUp:
		gate.open(t)
		return <-done
	case v := <-done:
		gate.open(t)
		return v
	}
}

// TestHandlerCommitInProgressAnsweredProcessed: the COMMIT of an event's
// transaction reached PostgreSQL and its answer was lost, and the
// transaction was still in progress when the store first looked its claim
// up (its COMMIT held by a deferred constraint trigger that waits for a
// lock, as one waiting for synchronous replication is held); it committed
// just after. The store waits for the transaction's end: the delivery is
// answered 200 processed and reported processed, once; Stripe's resend is
// a duplicate.
func TestHandlerCommitInProgressAnsweredProcessed(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	tracer, lookedUp := lookUpCloses(func(string) {})
	db := newCommitCutDB(t, &armed, tracer)
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(t.Context()))
	_, err = db.Pool.Exec(t.Context(), `CREATE TABLE paid (invoice text)`)
	require.NoError(t, err)
	gate := newTriggerGate(t, db, "INSERT", "paid", "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW")
	h, results := reportingHandler(t, store, func(ctx context.Context, tx idempotency.Tx) error {
		_, err := idempotency.PgxTx(tx).Exec(ctx, `INSERT INTO paid VALUES ('in_sync_commit_in_progress')`)
		armed.Store(true)
		return err
	})
	payload := invoicePayload(t, "evt_sync_commit_in_progress", "in_sync_commit_in_progress", "acct_1")

	answered := make(chan idempotencytest.Answer, 1)
	go func() { answered <- idempotencytest.Deliver(h, payload, testSecret) }()
	a := openWhenLookedUp(t, gate, lookedUp, answered)
	require.False(t, armed.Load(), "the COMMIT was sent and its answer lost")
	requireCommittedOnce(t, h, store, payload, "evt_sync_commit_in_progress", a, results)
}
