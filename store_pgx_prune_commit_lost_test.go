package idempotency_test

import (
	"bytes"
	"net"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// clearLostConn arms its commitFatalConn at the first statement that
// clears task arguments it sends: that batch's COMMIT goes through and is
// answered by the FATAL error of a session ended as it waited for
// synchronous replication.
type clearLostConn struct {
	*commitFatalConn
	once *atomic.Bool
}

func (c *clearLostConn) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("SET payload = ''")) && c.once.CompareAndSwap(false, true) {
		c.armed.Store(true)
	}
	return c.commitFatalConn.Write(b)
}

// TestPgxPruneBatchCommitAnswerLostCounted: the first batch of a prune
// clearing task arguments (3 of 5 tasks finished 30 days ago) commits,
// and its COMMIT is answered FATAL as the session ends (terminated as it
// waited for synchronous replication, having committed locally). The
// prune finds that batch's transaction committed and counts it, then
// clears the other 2: TaskArgsCleared is 5, as many as were cleared. It
// was 2: the batch was taken for one that committed nothing and run again
// on another connection, which found its 3 tasks cleared and took the
// next ones.
func TestPgxPruneBatchCommitAnswerLostCounted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var armed, once atomic.Bool
	db := wrappedConnsDB(t, func(conn net.Conn) net.Conn {
		return &clearLostConn{commitFatalConn: &commitFatalConn{Conn: conn, armed: &armed}, once: &once}
	})
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(ctx))
	_, err = db.Pool.Exec(ctx, `INSERT INTO idempotency_inbox (event_id, event_type, kind, created, payload, state, attempt,
    received_at, next_attempt_at, finished_at)
SELECT 'task:receipt:in_' || i, 'receipt', 'task', now(), '"args"', 'processed', 1,
    now() - interval '31 days', now() - interval '31 days', now() - interval '30 days' + i * interval '1 second'
FROM generate_series(1, 5) AS i`)
	require.NoError(t, err)

	rep, err := store.Prune(ctx, idempotency.Retention{BatchSize: 3, Pause: -1})
	require.NoError(t, err)
	require.True(t, once.Load() && !armed.Load(), "the first batch's COMMIT was sent and answered FATAL")
	var cleared int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_inbox WHERE payload = ''`).Scan(&cleared))
	require.Equal(t, 5, cleared)
	require.Equal(t, idempotency.PruneReport{TaskArgsCleared: 5}, rep, "each task cleared counted once")
}
