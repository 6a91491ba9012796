package idempotencyotel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestAttemptSpanSaysHowOftenItWasRedriven: an attempt's span carries
// idempotency.redrives, the record's Redrives: an attempt 1 of an event
// redriven twice tells itself apart from its first delivery's.
func TestAttemptSpanSaysHowOftenItWasRedriven(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t, time.Now)
	for _, rec := range []idempotency.InboxRecord{
		{EventID: "evt_never", EventType: "invoice.paid", Attempt: 1},
		{EventID: "evt_redriven", EventType: "invoice.paid", Attempt: 1, Redrives: 2, RedrivenAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
	} {
		_, done := tel.Observer().Attempt(t.Context(), rec, "")
		done(idempotency.Result{EventID: rec.EventID, EventType: rec.EventType, Attempt: 1,
			Outcome: idempotency.OutcomeProcessed, State: idempotency.InboxProcessed})
	}
	spans := tel.spans.GetSpans()
	require.Len(t, spans, 2)
	redrives := map[string]int64{}
	for _, s := range spans {
		id, ok := attr(s, "messaging.message.id")
		require.True(t, ok)
		n, ok := attr(s, "idempotency.redrives")
		require.True(t, ok, "span of %s has no idempotency.redrives", id.AsString())
		redrives[id.AsString()] = n.AsInt64()
	}
	require.Equal(t, map[string]int64{"evt_never": 0, "evt_redriven": 2}, redrives)
}
