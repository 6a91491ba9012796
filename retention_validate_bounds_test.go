package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRetentionValidateBounds: each least window is accepted, and a
// nanosecond less is refused.
func TestRetentionValidateBounds(t *testing.T) {
	day := 24 * time.Hour
	keys := idempotency.DefaultEventIDRetention + idempotency.DefaultDeadLetterRetention
	for _, c := range []struct {
		r  idempotency.Retention
		ok bool
	}{
		{idempotency.Retention{Tasks: keys}, true},
		{idempotency.Retention{Tasks: keys - time.Nanosecond}, false},
		{idempotency.Retention{Guards: keys}, true},
		{idempotency.Retention{Guards: keys - time.Nanosecond}, false},
		{idempotency.Retention{EventIDs: idempotency.DefaultEventIDRetention}, true},
		{idempotency.Retention{EventIDs: idempotency.DefaultEventIDRetention - time.Nanosecond}, false},
		{idempotency.Retention{Payloads: 10 * day, DeadLetters: 10 * day}, true},
		{idempotency.Retention{Payloads: 10 * day, DeadLetters: 10*day - time.Nanosecond}, false},
		{idempotency.Retention{BatchSize: idempotency.MaxPruneBatch}, true},
		{idempotency.Retention{BatchSize: 1}, true},
	} {
		err := c.r.Validate()
		if c.ok {
			require.NoError(t, err, "%+v", c.r)
		} else {
			require.Error(t, err, "%+v", c.r)
		}
	}
}
