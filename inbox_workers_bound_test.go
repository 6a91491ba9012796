package idempotency_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// NewInbox refuses an InboxConfig.Workers no process can run. It accepted
// any positive count, and Run then panicked on its first line for a count
// whose queue (twice Workers) overflows an int ("makechan: size out of
// range"), or tried to start that many goroutines and as long a queue.
func TestInboxWorkersBound(t *testing.T) {
	t.Parallel()
	for _, workers := range []int{math.MaxInt, math.MaxInt / 2, 1 << 40} {
		m := newMemInbox(t, idempotency.InboxConfig{})
		in, err := idempotency.NewInbox(m.store, m.hs, idempotency.InboxConfig{
			Workers: workers, IngestWorkers: 1, Logger: discardLogger(),
		})
		if err != nil {
			require.ErrorContains(t, err, "InboxConfig.Workers", "Workers %d", workers)
			continue
		}
		if workers != math.MaxInt {
			t.Fatalf("NewInbox accepted Workers %d: Run would start that many goroutines", workers)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel() // Run only has to start and stop
		var panicked any
		func() {
			defer func() { panicked = recover() }()
			_ = in.Run(ctx)
		}()
		t.Fatalf("NewInbox accepted Workers %d; Run panicked with %v", workers, panicked)
	}
	_, err := idempotency.NewInbox(idempotency.NewMemoryStore(), idempotency.NewHandlers(),
		idempotency.InboxConfig{Workers: 10000, Logger: discardLogger()})
	require.NoError(t, err, "the largest Workers accepted")
}
