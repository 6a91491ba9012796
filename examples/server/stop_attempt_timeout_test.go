package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestStopGivesAttemptsTheirTimeout: a stop gives the inbox's attempts in
// flight as long as -attempt-timeout lets one run (InboxConfig's own
// default ShutdownTimeout), so that with -attempt-timeout 2m an attempt
// is not cut at 30 s, and with the default still 30 s. It gave them 30 s
// whatever the flag.
func TestStopGivesAttemptsTheirTimeout(t *testing.T) {
	t.Parallel()
	for _, attemptTimeout := range []time.Duration{idempotency.DefaultInboxTimeout, 2 * time.Minute, 5 * time.Second} {
		require.Equal(t, attemptTimeout, workersStopGrace(attemptTimeout), "-attempt-timeout %s", attemptTimeout)
	}
}
