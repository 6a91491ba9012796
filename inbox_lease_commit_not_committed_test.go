package idempotency_test

import (
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxLeaseNotCommittedReportsNoDeadLetters: a lease dead-letters an
// event whose lease expired at its last attempt, its statements
// answered, and its transaction does not commit: its COMMIT never
// reaches the server (the connection closed before it went out), or the
// server fails it. The lease fails and reports nothing: the event is
// not a dead letter, and neither OnResult nor the Observer hears of it.
// It is still there for the next lease, which dead-letters it and
// reports it once. Where the COMMIT's answer was lost, the lease looks
// its transaction up and finds it not committed; where the server
// answered, its error tells. The store only begins (a PgxBeginner): its
// COMMIT travels on its own, after the answers of the lease's
// statements.
func TestPgxLeaseNotCommittedReportsNoDeadLetters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		lookedUp bool // the lease asks the server whether it committed
		arm      func(t *testing.T, db *pgInbox, armed *atomic.Bool) (disarm func())
	}{
		{"COMMIT never sent", true, func(_ *testing.T, _ *pgInbox, armed *atomic.Bool) func() {
			armed.Store(true)
			return func() { require.False(t, armed.Load(), "the connection closed at the COMMIT") }
		}},
		{"COMMIT failed", false, func(t *testing.T, p *pgInbox, _ *atomic.Bool) func() {
			schema := quoteIdent(p.b.db.Schema)
			_, err := p.b.db.Pool.Exec(t.Context(), fmt.Sprintf(`
CREATE FUNCTION %[1]s.refuse_dead_letters() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'no dead letters';
END $$;
CREATE CONSTRAINT TRIGGER refuse_dead_letters AFTER UPDATE ON %[1]s.idempotency_inbox
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.state = 'dead_letter')
    EXECUTE FUNCTION %[1]s.refuse_dead_letters();`, schema))
			require.NoError(t, err)
			return func() {
				_, err := p.b.db.Pool.Exec(t.Context(), `DROP TRIGGER refuse_dead_letters ON `+schema+`.idempotency_inbox`)
				require.NoError(t, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var armed, lookedUp atomic.Bool
			db := wrappedConnsDB(t, func(conn net.Conn) net.Conn { return &commitDroppedConn{Conn: conn, armed: &armed, dropped: func() {}} },
				func(c *pgxpool.Config) {
					c.ConnConfig.Tracer = queryEndTracer(func(sql string) {
						if strings.Contains(sql, "txid_status") {
							lookedUp.Store(true)
						}
					})
				})
			b := newPgBackendIn(t, db, idempotency.PgxConfig{}, func(p *pgxpool.Pool) idempotency.PgxBeginner { return beginOnly{p} })
			p := newPgInbox(t, b, idempotency.InboxConfig{PollOnly: true, MaxAttempts: 1})
			p.deliver(t, "evt_not_committed", "in_not_committed", 0)
			p.lease(t, 1) // its worker dies: the lease expires at its last attempt

			p.clock.Advance(idempotency.DefaultLease)
			disarm := tc.arm(t, p, &armed)
			_, err := idempotency.LeaseInbox(t.Context(), p.inbox, 10)
			require.Error(t, err, "the lease's transaction did not commit")
			disarm()
			require.Equal(t, tc.lookedUp, lookedUp.Load(), "the lease looked its transaction up")
			rec := p.record(t, "evt_not_committed")
			require.Equal(t, idempotency.InboxProcessing, rec.State, "not dead-lettered")
			p.mu.Lock()
			require.Empty(t, p.results, "no dead letter is reported")
			p.mu.Unlock()

			p.lease(t, 0) // the next lease dead-letters it
			require.Equal(t, idempotency.InboxDeadLetter, p.record(t, "evt_not_committed").State)
			p.mu.Lock()
			defer p.mu.Unlock()
			require.Len(t, p.results, 1, "the dead letter is reported once, by the lease that moved it")
			require.Equal(t, "evt_not_committed", p.results[0].EventID)
			require.Equal(t, idempotency.InboxDeadLetter, p.results[0].State)
			require.ErrorIs(t, p.results[0].Err, idempotency.ErrLeaseExpired)
		})
	}
}
