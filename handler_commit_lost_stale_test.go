package idempotency_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestHandlerCommitLostLookedUpPastStaleConn: the COMMIT of an event's
// transaction went through on PostgreSQL while the connection dropped
// before its answer, and the pool's other sessions ended meanwhile (an
// administrator terminated them; the pool, whose connections were idle a
// moment, does not ping them first). The look-up that finds the claim
// committed goes to another connection when the first one it is handed
// is stale, as every read does: the delivery is answered 200 processed,
// once; Stripe's resend is a duplicate.
func TestHandlerCommitLostLookedUpPastStaleConn(t *testing.T) {
	t.Parallel()
	const app = "commit_lost_stale"
	var armed, cut atomic.Bool
	db := wrappedConnsDB(t, func(conn net.Conn) net.Conn {
		return &commitCutConn{Conn: conn, armed: &armed, cut: &cut}
	}, func(c *pgxpool.Config) {
		c.ConnConfig.RuntimeParams["application_name"] = app
		c.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	})
	ctx := t.Context()
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(ctx))
	// Two sessions idle in the pool: one for the event, one for the look-up.
	c1, err := db.Pool.Acquire(ctx)
	require.NoError(t, err)
	c2, err := db.Pool.Acquire(ctx)
	require.NoError(t, err)
	c1.Release()
	c2.Release()
	h, results := reportingHandler(t, store, func(ctx context.Context, tx idempotency.Tx) error {
		var ended int
		err := idempotency.PgxTx(tx).QueryRow(ctx, `SELECT count(*) FROM (SELECT pid FROM pg_stat_activity
  WHERE application_name = $1 AND pid <> pg_backend_pid() OFFSET 0) AS other
WHERE pg_terminate_backend(pid, 10000)`, app).Scan(&ended)
		if err == nil && ended == 0 {
			t.Error("no other session of the pool was ended")
		}
		armed.Store(true)
		return err
	})
	payload := invoicePayload(t, "evt_sync_commit_lost_stale", "in_sync_commit_lost_stale", "acct_1")

	a := idempotencytest.Deliver(h, payload, testSecret)
	require.False(t, armed.Load(), "the COMMIT was sent and its answer lost")
	requireCommittedOnce(t, h, store, payload, "evt_sync_commit_lost_stale", a, results)
}
