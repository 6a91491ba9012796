package idempotencyotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// idempotency.inbox.running is this process's: 0 before Inbox.Run, 1
// while it runs, 0 again once it returned, on both stores. It is what
// tells workers that are down from workers that run and attempt nothing.
func TestObserveInboxRunning(t *testing.T) {
	t.Parallel()
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in, _, _, tel := observedInbox(t, open(t))
			require.Equal(t, map[string]float64{"": 0}, tel.points(t)["idempotency.inbox.running"], "before Run")

			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- in.Run(ctx) }()
			require.Eventually(t, in.Running, 10*time.Second, time.Millisecond)
			require.Equal(t, map[string]float64{"": 1}, tel.points(t)["idempotency.inbox.running"], "while Run runs")

			cancel()
			require.NoError(t, <-done)
			require.Equal(t, map[string]float64{"": 0}, tel.points(t)["idempotency.inbox.running"], "once Run returned")
		})
	}
}
