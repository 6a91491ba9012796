package idempotency_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestInboxRunning: Inbox.Running is true from Run's start until it
// returns, on both stores; a second Run, refused, leaves it true, and a
// nil or zero Inbox reports false.
func TestInboxRunning(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in, err := idempotency.NewInbox(store, idempotency.NewHandlers(), idempotency.InboxConfig{Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, err)
			require.False(t, in.Running(), "before Run")

			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- in.Run(ctx) }()
			require.Eventually(t, in.Running, 10*time.Second, time.Millisecond)
			require.ErrorContains(t, in.Run(t.Context()), "already running")
			require.True(t, in.Running(), "a second Run, refused, stops not the first")

			cancel()
			require.NoError(t, <-done)
			require.False(t, in.Running(), "once Run returned")
		})
	}
	var nilInbox *idempotency.Inbox
	require.False(t, nilInbox.Running())
	require.False(t, (&idempotency.Inbox{}).Running())
}
