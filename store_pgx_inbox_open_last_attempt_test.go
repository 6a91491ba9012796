package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxInboxOpenLastAttemptIsNotDeadLettered: an attempt that used the
// last one and is still applying past its lease is neither dead-lettered
// nor waited for by a lease: the lease skips its locked row and returns at
// once, and the attempt then ends as it applied. (No test failed when
// PgxStore's dead-lettering of expired last attempts waited for their
// locked rows.)
func TestPgxInboxOpenLastAttemptIsNotDeadLettered(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	p := newPgInbox(t, b, idempotency.InboxConfig{Lease: time.Minute, Timeout: 10 * time.Second, MaxAttempts: 1})
	p.deliver(t, "evt_open_last", "in_open_last", 1)
	finish := openAttempt(t, p, "evt_open_last")
	p.clock.Advance(2 * time.Minute)
	p.lease(t, 0) // neither dead-lettered nor waited for
	require.Equal(t, idempotency.InboxProcessing, p.record(t, "evt_open_last").State)
	finish()
	require.Equal(t, idempotency.InboxProcessed, p.record(t, "evt_open_last").State)
}
