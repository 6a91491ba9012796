package idempotency_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// A pgx tracer that panics during an attempt's claim and again as the
// claim's transaction is rolled back fails the attempt with a PanicError,
// and its connection is closed and given back to the pool all the same:
// the panicking rollback left it in use, its transaction open on the
// server, holding the event's row locked for as long as the process lived.
func TestPgxInboxTracerPanicInTheRollbackClosesTheConnection(t *testing.T) {
	t.Parallel()
	tr := newPanickingTracer("UPDATE", "idempotency_inbox", "finished_at = $4")
	tr.again = []string{"rollback"}
	p := tracedInbox(t, tr)
	p.deliver(t, "evt_rollback_panic", "in_rollback_panic", 0)

	n, err := panicInWorkDue(t, p, tr)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	res := p.lastResult(t)
	require.Equal(t, idempotency.OutcomeFailed, res.Outcome)
	_, ok := errors.AsType[*idempotency.PanicError](res.Err)
	require.True(t, ok, "%v", res.Err)
	require.Zero(t, p.b.get(t, "in_rollback_panic"), "rolled back")
	requireAppliedOnceLater(t, p, time.Minute, "evt_rollback_panic", "in_rollback_panic") // the backoff
}
