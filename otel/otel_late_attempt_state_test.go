package idempotencyotel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestLateAttemptSpanHasNoEmptyState: the span of an attempt whose end
// was not recorded (a worker that hung past its lease and came back: its
// Result has no State, the lease that found it expired counts it) carries
// no idempotency.state, where it carried an empty one, which a trace
// backend's query by state reads as a state of its own. An attempt whose
// end was recorded carries its state.
func TestLateAttemptSpanHasNoEmptyState(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t, time.Now)
	for _, res := range []idempotency.Result{
		{EventID: "evt_late", EventType: "invoice.paid", Attempt: 1, Outcome: idempotency.OutcomeFailed, Err: idempotency.ErrLeaseExpired},
		{EventID: "evt_done", EventType: "invoice.paid", Attempt: 1, Outcome: idempotency.OutcomeProcessed, State: idempotency.InboxProcessed},
	} {
		_, done := tel.Observer().Attempt(t.Context(), idempotency.InboxRecord{EventID: res.EventID, EventType: res.EventType, Attempt: 1}, "")
		done(res)
	}
	spans := tel.spans.GetSpans()
	require.Len(t, spans, 2)
	states := map[string]string{}
	for _, s := range spans {
		id, ok := attr(s, "messaging.message.id")
		require.True(t, ok)
		if st, ok := attr(s, "idempotency.state"); ok {
			states[id.AsString()] = st.AsString()
		}
	}
	require.Equal(t, map[string]string{"evt_done": "processed"}, states)
}
