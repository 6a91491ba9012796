package idempotencyotel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"

	"github.com/seed-a84bb619/idempotency"
)

// TestAttemptStoreUnavailableIsAnError: an attempt that found the store
// unavailable ends its span with an error status, as a failed one does.
func TestAttemptStoreUnavailableIsAnError(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t, time.Now)
	rec := idempotency.InboxRecord{EventID: "evt_unavailable", EventType: "invoice.paid", Kind: idempotency.KindEvent, Attempt: 1}
	_, done := tel.Observer().Attempt(t.Context(), rec, "")
	done(idempotency.Result{EventID: rec.EventID, EventType: rec.EventType, Outcome: idempotency.OutcomeUnavailable})
	spans := tel.spans.GetSpans()
	require.Len(t, spans, 1)
	require.Equal(t, codes.Error, spans[0].Status.Code)
}

// TestFailedAttemptIsNoDeadLetter: an attempt that leaves its event failed,
// to be retried, is counted among the attempts and not as a dead letter.
func TestFailedAttemptIsNoDeadLetter(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t, time.Now)
	rec := idempotency.InboxRecord{EventID: "evt_retried", EventType: "invoice.paid", Kind: idempotency.KindEvent, Attempt: 1}
	_, done := tel.Observer().Attempt(t.Context(), rec, "")
	done(idempotency.Result{EventID: rec.EventID, EventType: rec.EventType, Outcome: idempotency.OutcomeFailed, State: idempotency.InboxFailed, Err: errDownstream})
	pts := tel.points(t)
	require.Equal(t, map[string]float64{"kind=event,outcome=failed,state=failed": 1}, pts["idempotency.attempts"])
	require.Empty(t, pts["idempotency.dead_letters"])
}
