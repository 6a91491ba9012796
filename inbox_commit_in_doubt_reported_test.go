package idempotency_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// commitLostConn is a connection to PostgreSQL that, once armed, sends
// the next COMMIT, reads the server's answer in full and then fails as a
// connection that dropped before the answer arrived: the transaction
// committed, and its client cannot tell.
type commitLostConn struct {
	net.Conn
	armed      *atomic.Bool
	committing atomic.Bool
}

func (c *commitLostConn) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("commit")) && c.armed.CompareAndSwap(true, false) {
		c.committing.Store(true)
	}
	return c.Conn.Write(b)
}

func (c *commitLostConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if !c.committing.Load() {
		return n, err
	}
	seen := append([]byte(nil), b[:n]...)
	for err == nil && !bytes.Contains(seen, []byte("COMMIT\x00")) {
		n, err = c.Conn.Read(b)
		seen = append(seen, b[:n]...)
	}
	_ = c.Conn.Close()
	return 0, io.ErrUnexpectedEOF
}

// TestInboxCommitLostReportedProcessed: an attempt whose COMMIT went
// through on PostgreSQL while its connection dropped before the answer
// (a terminated session, a network cut, the attempt's timeout) applied the
// event: the inbox shows it processed at that attempt. It is reported so,
// to OnResult and the Observer, once: not as failed with a lease lost to a
// newer attempt that never ran, which would count a failure the store
// does not show and no processed event the store does.
func TestInboxCommitLostReportedProcessed(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	db := pgtest.NewWithConfig(t, func(c *pgxpool.Config) {
		dial := c.ConnConfig.DialFunc
		c.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &commitLostConn{Conn: conn, armed: &armed}, nil
		}
	})
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(t.Context()))

	var runs atomic.Int32
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
		runs.Add(1)
		armed.Store(true) // the transaction's COMMIT is the next
		return nil
	})
	var mu sync.Mutex
	var onResult, observed []idempotency.Result
	icfg := idempotency.InboxConfig{Logger: discardLogger(), OnResult: func(r idempotency.Result) {
		mu.Lock()
		defer mu.Unlock()
		onResult = append(onResult, r)
	}}
	observeResults(&icfg, func(r idempotency.Result) {
		mu.Lock()
		defer mu.Unlock()
		observed = append(observed, r)
	})
	in, err := idempotency.NewInbox(store, hs, icfg)
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, invoicePayload(t, "evt_commit_lost", "in_commit_lost", "acct_1"), testSecret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)

	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.False(t, armed.Load(), "the COMMIT was sent and its answer lost")
	rec, ok, err := in.Lookup(t.Context(), "evt_commit_lost")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, idempotency.InboxProcessed, rec.State, "the COMMIT went through")
	require.Equal(t, 1, rec.Attempt)

	mu.Lock()
	defer mu.Unlock()
	for name, got := range map[string][]idempotency.Result{"OnResult": onResult, "Observer": observed} {
		require.Len(t, got, 1, name)
		r := got[0]
		require.Equal(t, idempotency.OutcomeProcessed, r.Outcome, "%s: %v", name, r.Err)
		require.Equal(t, idempotency.InboxProcessed, r.State, name)
		require.NoError(t, r.Err, name)
		require.Equal(t, 1, r.Attempt, name)
	}
	require.Equal(t, int32(1), runs.Load())
}
