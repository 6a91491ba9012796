package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRetentionRefusalInDays: a window refused by one of Retention's rules
// is written in days when it is a whole number of them, as windows are
// thought of (and as idemctl's flags take them), and as a Go duration
// otherwise.
func TestRetentionRefusalInDays(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	for _, c := range []struct {
		r    idempotency.Retention
		want string
	}{
		{idempotency.Retention{EventIDs: 30 * day},
			"idempotency: Retention.EventIDs 30 days: claimed event ids are kept at least 45 days, longer than recovery from the Events API reaches back (30 days), so that no event is applied twice"},
		{idempotency.Retention{DeadLetters: day},
			"idempotency: Retention.DeadLetters 1 day: dead letters are kept at least as long as finished events (Payloads, 7 days), so that they can be redriven"},
		{idempotency.Retention{Guards: 36 * time.Hour},
			"idempotency: Retention.Guards 36h0m0s: natural-key guards are kept (0) or kept at least as long as the event ids and the dead letters together (EventIDs 45 days + DeadLetters 90 days), so that"},
		{idempotency.Retention{Tasks: 44 * day},
			"idempotency: Retention.Tasks 44 days: finished tasks are kept (0) or kept at least as long as the event ids and the dead letters together (EventIDs 45 days + DeadLetters 90 days), so that"},
		{idempotency.Retention{Payloads: -day},
			"idempotency: Retention.Payloads -24h0m0s is negative"},
	} {
		err := c.r.Validate()
		require.Error(t, err, "%+v", c.r)
		require.Contains(t, err.Error(), c.want)
	}
}
