package idempotencytest

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testTaskEnqueuedAtItsAttempt: a task enqueued by an inbox worker's
// attempt is stored at the inbox's clock when the attempt ran (its
// ReceivedAt, what InboxStats.OldestPending and List's Since and Until
// read), not when the event that enqueued it was received.
func testTaskEnqueuedAtItsAttempt(t *testing.T, b StoreBackend) {
	tb := newTaskBench(t, b, idempotency.InboxConfig{})
	tb.provider.setAnswer(func(providerCall) error { return &providerError{Status: http.StatusServiceUnavailable} })
	tb.deliver(t, viaInbox, "evt_tea", "invoice.paid", "in_tea", http.StatusOK, idempotency.OutcomeQueued)
	tb.clock.Advance(time.Hour)
	attempt := tb.clock.Now()
	n, err := tb.inbox.WorkDue(ctxT(t))
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, 1)
	rec := tb.task(t, "in_tea")
	require.True(t, attempt.Equal(rec.ReceivedAt), "enqueued at %v, the attempt's time; stored %v", attempt, rec.ReceivedAt)
}
