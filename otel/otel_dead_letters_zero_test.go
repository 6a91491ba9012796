package idempotencyotel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDeadLettersReportedZeroFromTheStart: a new Telemetry reports
// idempotency.dead_letters at 0 for both kinds before any attempt, so
// that the series exist before the first dead letter. A counter series
// that first appears at 1 is missed by Prometheus's increase(), and the
// README's alert on dead-letter growth would stay silent for the first
// dead letters of every process.
func TestDeadLettersReportedZeroFromTheStart(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t, time.Now)
	pts := tel.points(t)
	require.Equal(t, map[string]float64{"kind=event": 0, "kind=task": 0}, pts["idempotency.dead_letters"])
}
