package idempotency_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxInboxLeaseSkipsALockedDueEvent: a lease does not wait for a due
// event whose row another transaction holds locked (a redrive still
// running, an operator's statement): it leases the other due events at
// once, and the locked one once it is free. A lease waits for no lock but
// the lease lock, which it holds meanwhile: waiting there would stop every
// lease of every process, and could deadlock with a redrive that locks
// the rows in another order. (No test failed when PgxStore's lease waited
// for its due rows' locks.)
func TestPgxInboxLeaseSkipsALockedDueEvent(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	p := newPgInbox(t, b, idempotency.InboxConfig{Lease: time.Minute, Timeout: 10 * time.Second})
	p.deliver(t, "evt_locked_a", "in_locked_a", 1)
	p.deliver(t, "evt_locked_b", "in_locked_b", 2)

	tx, err := b.db.Pool.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(t.Context()) }()
	_, err = tx.Exec(t.Context(), `SELECT 1 FROM `+pgx.Identifier{b.db.Schema, "idempotency_inbox"}.Sanitize()+` WHERE event_id = $1 FOR UPDATE`, "evt_locked_a")
	require.NoError(t, err)

	got, answered := answeredOrWaiting(t, b, leaseAsync(p.inbox))
	require.True(t, answered, "the lease waited for the locked row")
	require.NoError(t, got.err)
	require.Equal(t, []string{"evt_locked_b"}, got.ids)

	require.NoError(t, tx.Rollback(t.Context()))
	require.Equal(t, "evt_locked_a", p.lease(t, 1)[0].EventID())
}
