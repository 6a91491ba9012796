package idempotency_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestPgxLeaseErrorRollsBackBeforeItsCommitLookUp: a lease dead-letters
// an event whose lease expired at its last attempt, and then fails on the
// client with its transaction still open: a due event's received_at was
// set to infinity by hand, which the client cannot read into a time. The
// lease rolls its transaction back before it looks up whether it
// committed: the look-up finds it ended, not committed, at once, and
// the dead letter is not reported. The look-up ran first, while the
// transaction it asked about was still open on the lease's own
// connection: it found it in progress again and again, until it ended
// the lease's own session as one whose COMMIT never arrived.
func TestPgxLeaseErrorRollsBackBeforeItsCommitLookUp(t *testing.T) {
	t.Parallel()
	var lookUps, ended atomic.Int32
	db := pgtest.NewWithConfig(t, func(c *pgxpool.Config) {
		c.ConnConfig.Tracer = queryEndTracer(func(sql string) {
			switch {
			case strings.Contains(sql, "txid_status"):
				lookUps.Add(1)
			case strings.Contains(sql, "pg_terminate_backend"):
				ended.Add(1)
			}
		})
	})
	b := newPgBackendIn(t, db, idempotency.PgxConfig{}, func(p *pgxpool.Pool) idempotency.PgxBeginner { return beginOnly{p} })
	p := newPgInbox(t, b, idempotency.InboxConfig{PollOnly: true, MaxAttempts: 1})
	p.deliver(t, "evt_rolled_back_dead", "in_rolled_back_dead", 0)
	p.lease(t, 1) // its worker dies: the lease expires at its last attempt
	p.deliver(t, "evt_unreadable", "in_unreadable", 1)
	_, err := db.Pool.Exec(t.Context(), `UPDATE `+quoteIdent(db.Schema)+`.idempotency_inbox
SET received_at = 'infinity' WHERE event_id = 'evt_unreadable'`)
	require.NoError(t, err)

	p.clock.Advance(idempotency.DefaultLease)
	_, err = idempotency.LeaseInbox(t.Context(), p.inbox, 10)
	require.ErrorContains(t, err, "cannot scan Infinity")
	require.Equal(t, int32(1), lookUps.Load(), "the look-up found the transaction ended at its first ask")
	require.Zero(t, ended.Load(), "no session was ended")
	require.Equal(t, idempotency.InboxProcessing, p.record(t, "evt_rolled_back_dead").State, "rolled back")
	p.mu.Lock()
	defer p.mu.Unlock()
	require.Empty(t, p.results, "no dead letter is reported")
}
