package idempotencytest

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testTaskSnoozeKeepsLastError: a snooze is not a success: a task that
// failed and then snoozed still shows the failed attempt's error as its
// LastError (and its attempt count), so that an operator looking at it
// sees why it has not run yet. Its success clears the error. Neither the
// failed nor the snoozed task holds a lease (LeaseUntil zero).
func testTaskSnoozeKeepsLastError(t *testing.T, b StoreBackend) {
	tb := newTaskBench(t, b, idempotency.InboxConfig{Backoff: minuteBackoff})
	tb.provider.setAnswer(func(providerCall) error { return &providerError{Status: http.StatusServiceUnavailable} })
	tb.deliver(t, viaHandler, "evt_snooze_err", "invoice.paid", "in_snooze_err", http.StatusOK, idempotency.OutcomeProcessed)
	tb.work(t, 1)
	r := tb.task(t, "in_snooze_err")
	require.Equal(t, idempotency.InboxFailed, r.State)
	require.Equal(t, "provider answered 503", r.LastError)
	require.True(t, r.LeaseUntil.IsZero(), "failed: no lease held")

	tb.provider.setAnswer(func(providerCall) error {
		return &providerError{Status: http.StatusTooManyRequests, RetryAfter: 10 * time.Minute}
	})
	for i := range 2 {
		tb.clock.Advance(time.Minute)
		tb.work(t, 1)
		r = tb.task(t, "in_snooze_err")
		require.Equal(t, idempotency.InboxPending, r.State, "snooze %d", i+1)
		require.Equal(t, 1, r.Attempt, "snooze %d: the failed attempt still counts, the snoozed one does not", i+1)
		require.Equal(t, "provider answered 503", r.LastError, "snooze %d: a snooze keeps the error of the attempt before", i+1)
		require.True(t, r.LeaseUntil.IsZero(), "snooze %d: no lease held", i+1)
		tb.clock.Advance(9 * time.Minute)
	}

	tb.provider.setAnswer(nil)
	tb.clock.Advance(time.Minute)
	tb.work(t, 1)
	r = tb.task(t, "in_snooze_err")
	require.Equal(t, idempotency.InboxProcessed, r.State)
	require.Empty(t, r.LastError, "done: no error left")
}
