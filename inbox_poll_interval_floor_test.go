package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestInboxRefusesPollIntervalUnderTenMilliseconds: PollInterval: 1 (a
// unit left out: one second meant) is a nanosecond, and Run leased in a
// loop: on PostgreSQL, about 3,000 lease transactions a second from an
// idle inbox, against 3 with 1 s, and nothing said so. NewInbox refuses a
// poll interval under 10 ms, naming the field.
func TestInboxRefusesPollIntervalUnderTenMilliseconds(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{1, 5, time.Microsecond, 9 * time.Millisecond} {
		_, err := idempotency.NewInbox(idempotency.NewMemoryStore(), idempotency.NewHandlers(), idempotency.InboxConfig{PollInterval: d})
		require.ErrorContains(t, err, "InboxConfig.PollInterval", "%v", d)
	}
	_, err := idempotency.NewInbox(idempotency.NewMemoryStore(), idempotency.NewHandlers(), idempotency.InboxConfig{PollInterval: 10 * time.Millisecond})
	require.NoError(t, err)
}
