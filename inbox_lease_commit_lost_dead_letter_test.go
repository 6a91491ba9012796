package idempotency_test

import (
	"net"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxLeaseCommitLostReportsItsDeadLetters: a lease dead-letters an
// event whose lease expired at its last attempt, and its COMMIT goes
// through while its answer is lost (the session ended as it waited for
// synchronous replication, FATAL). The lease fails, and finds its
// transaction committed: the dead letter is reported once, failed with
// ErrLeaseExpired, State dead_letter, as a lease that was answered
// reports it. It was not reported at all: OnResult, the Observer and the
// log never heard of it. The store only begins (a PgxBeginner): its
// COMMIT travels on its own, after the answers of the lease's
// statements.
func TestPgxLeaseCommitLostReportsItsDeadLetters(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	db := wrappedConnsDB(t, func(conn net.Conn) net.Conn { return &commitFatalConn{Conn: conn, armed: &armed} })
	b := newPgBackendIn(t, db, idempotency.PgxConfig{}, func(p *pgxpool.Pool) idempotency.PgxBeginner { return beginOnly{p} })
	p := newPgInbox(t, b, idempotency.InboxConfig{PollOnly: true, MaxAttempts: 1})
	p.deliver(t, "evt_lost_dead", "in_lost_dead", 0)
	p.lease(t, 1) // its worker dies: the lease expires at its last attempt

	p.clock.Advance(idempotency.DefaultLease)
	armed.Store(true)
	_, err := idempotency.LeaseInbox(t.Context(), p.inbox, 10)
	require.Error(t, err, "the lease's COMMIT went unanswered")
	require.False(t, armed.Load(), "the lease's COMMIT was sent")
	require.Equal(t, idempotency.InboxDeadLetter, p.record(t, "evt_lost_dead").State)

	p.mu.Lock()
	results := append([]idempotency.Result(nil), p.results...)
	p.mu.Unlock()
	require.Len(t, results, 1, "the dead letter is reported once")
	require.Equal(t, "evt_lost_dead", results[0].EventID)
	require.Equal(t, 1, results[0].Attempt)
	require.Equal(t, idempotency.OutcomeFailed, results[0].Outcome)
	require.Equal(t, idempotency.InboxDeadLetter, results[0].State)
	require.ErrorIs(t, results[0].Err, idempotency.ErrLeaseExpired)
}
