package idempotency_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestInboxMaxAttempts: Inbox.MaxAttempts is InboxConfig.MaxAttempts as
// NewInbox set it, the default when left 0, and 0 for an Inbox NewInbox
// did not return, without a panic.
func TestInboxMaxAttempts(t *testing.T) {
	t.Parallel()
	for given, want := range map[int]int{3: 3, 0: idempotency.DefaultMaxAttempts} {
		in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), idempotency.NewHandlers(), idempotency.InboxConfig{MaxAttempts: given, Logger: discardLogger()})
		require.NoError(t, err)
		require.Equal(t, want, in.MaxAttempts(), "InboxConfig.MaxAttempts %d", given)
	}
	for name, in := range map[string]*idempotency.Inbox{"zero": {}, "nil": nil} {
		require.NotPanics(t, func() { require.Zero(t, in.MaxAttempts(), name) }, name)
	}
}
