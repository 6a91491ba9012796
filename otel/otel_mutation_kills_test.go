package idempotencyotel_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
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
	require.Equal(t, map[string]float64{"kind=event": 0, "kind=task": 0}, pts["idempotency.dead_letters"])
}

// TestFetchSpan: a fetch's span starts the fetch's duration before it
// ends, and only a failed fetch marks it as an error: a 404 (not_found,
// which skips the event) does not. (No test failed when the span started
// at its end, or when a 404 was marked as an error.)
func TestFetchSpan(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t, time.Now)
	fetch := tel.Observer().Fetch
	fetch(t.Context(), "customer.subscription.updated", "sub_ok", 1500*time.Millisecond, nil)
	fetch(t.Context(), "customer.subscription.updated", "sub_gone", time.Second, fmt.Errorf("%w: 404", idempotency.ErrObjectNotFound))
	fetch(t.Context(), "customer.subscription.updated", "sub_down", time.Second, errDownstream)
	spans := byName(tel.spans.GetSpans(), "stripe fetch")
	require.Len(t, spans, 3)
	want := map[string]struct {
		status codes.Code
		took   time.Duration
	}{"sub_ok": {codes.Unset, 1500 * time.Millisecond}, "sub_gone": {codes.Unset, time.Second}, "sub_down": {codes.Error, time.Second}}
	for _, s := range spans {
		obj, ok := attr(s, "stripe.object.id")
		require.True(t, ok)
		w := want[obj.AsString()]
		require.Equal(t, w.status, s.Status.Code, obj.AsString())
		require.Equal(t, w.took, s.EndTime.Sub(s.StartTime), "the span of %s lasts the fetch", obj.AsString())
	}
}

// TestTaskAttemptSpanAndMetrics: a task's attempt is a "process {task}"
// span with its attempt number and kind, and is counted with kind task.
// (No test observed a task or an attempt after the first: the kind
// always "event", and the attempt always 1, survived.)
func TestTaskAttemptSpanAndMetrics(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t, time.Now)
	rec := idempotency.InboxRecord{Kind: idempotency.KindTask, EventID: "task:charge:in_1", EventType: "charge", Attempt: 2}
	_, done := tel.Observer().Attempt(t.Context(), rec, "")
	done(idempotency.Result{EventID: rec.EventID, EventType: rec.EventType, Kind: idempotency.KindTask, Attempt: 2,
		Outcome: idempotency.OutcomeProcessed, State: idempotency.InboxProcessed})
	spans := tel.spans.GetSpans()
	require.Len(t, spans, 1)
	require.Equal(t, "process charge", spans[0].Name)
	requireAttr(t, spans[0], "idempotency.attempt", int64(2))
	requireAttr(t, spans[0], "idempotency.kind", "task")
	pts := tel.points(t)
	require.Equal(t, map[string]float64{"kind=task,outcome=processed,state=processed": 1}, pts["idempotency.attempts"])
	require.Equal(t, map[string]float64{"kind=task,outcome=processed": 1}, pts["idempotency.attempt.duration"])
}

// TestOldestPendingAgeNotNegative: the oldest pending event's age is 0,
// not negative, when the Telemetry's clock is behind the one that dated
// the event (another replica's). (No test failed without the bound.)
func TestOldestPendingAgeNotNegative(t *testing.T) {
	t.Parallel()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	tel := newTelemetry(t, func() time.Time { return clock.Now().Add(-time.Minute) })
	in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), handlers(), idempotency.InboxConfig{Now: clock.Now, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	reg, err := tel.ObserveInbox(in)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, reg.Unregister()) })
	h, err := in.Handler(idempotency.Config{Secrets: []string{secret}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, event(t, "evt_ahead", "invoice.paid", "in_1"), secret).Outcome)
	require.Equal(t, map[string]float64{"": 0}, tel.points(t)["idempotency.inbox.oldest_pending_age"])
}
