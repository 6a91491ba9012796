package idempotency_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// countingConn counts the bytes read from the server.
type countingConn struct {
	net.Conn
	read *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// TestPgxOldLongSkipReasonIsNotSentWhole: LookupEvent and ListEvents of a
// ledger row skipped before skip reasons were cut, whose reason is of
// megabytes (here 10 MB), have PostgreSQL send its first 1000 characters
// alone, not the whole reason for the store to cut: a list of such rows
// came over the connection whole. (No test failed when the query read the
// whole column and the store cut it.)
func TestPgxOldLongSkipReasonIsNotSentWhole(t *testing.T) {
	t.Parallel()
	var read atomic.Int64
	b := newPgBackendWithSettings(t, nil, func(c *pgxpool.Config) {
		var d net.Dialer
		c.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{Conn: conn, read: &read}, nil
		}
	})
	at := time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)
	_, err := b.db.Pool.Exec(t.Context(), `INSERT INTO idempotency_events (event_id, event_type, object_id, outcome, skip_reason, received_at, processed_at)
VALUES ('evt_old_wire', 'invoice.paid', 'in_old_wire', 'skipped', repeat('and more ', 1200000), $1, $1)`, at)
	require.NoError(t, err)

	before := read.Load()
	rec, ok, err := b.store.LookupEvent(t.Context(), "evt_old_wire")
	require.NoError(t, err)
	require.True(t, ok)
	require.Len(t, rec.SkipReason, 1000)
	recs, err := b.store.ListEvents(t.Context(), idempotency.EventFilter{ObjectID: "in_old_wire"})
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Len(t, recs[0].SkipReason, 1000)
	require.Less(t, read.Load()-before, int64(64<<10), "bytes read from the server")
}
