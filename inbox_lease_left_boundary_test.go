package idempotency_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// A task leased ahead whose lease has exactly Timeout left when the worker
// takes it is attempted under that lease: only one with less than Timeout
// left is given back (InboxConfig.Lease, Run).
func TestInboxLeasedAheadWithTimeoutLeftIsAttempted(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	t0 := clock.Now()
	hs := idempotency.NewHandlers()
	var mu sync.Mutex
	runs := map[string]int{}
	started := make(chan string, 4)
	release := map[string]chan struct{}{"k1": make(chan struct{}), "k2": make(chan struct{})}
	task := idempotency.NewTask(hs, "slow", func(ctx context.Context, run idempotency.TaskRun[struct{}]) error {
		mu.Lock()
		runs[run.Key]++
		mu.Unlock()
		started <- run.Key
		select {
		case <-release[run.Key]:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	cfg := idempotency.InboxConfig{Workers: 1, Timeout: time.Minute, Lease: 90 * time.Second, Now: clock.Now, Logger: discardLogger()}
	a, err := idempotency.NewInbox(store, hs, cfg)
	require.NoError(t, err)
	for _, key := range []string{"k1", "k2"} {
		_, err := store.Run(t.Context(), idempotency.Claim{EventID: "evt_" + key, EventType: "invoice.paid", ReceivedAt: clock.Now()},
			func(ctx context.Context, tx idempotency.Tx) error {
				_, err := task.Enqueue(ctx, tx, key, struct{}{})
				return err
			})
		require.NoError(t, err)
	}

	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		close(release["k2"])
		stop()
		require.NoError(t, recv(t, done, "Run"))
	}()
	require.Equal(t, "k1", recv(t, started, "k1's attempt"))
	require.Eventually(t, func() bool { // k2 leased ahead, waiting for the worker
		st, err := a.Stats(t.Context())
		return err == nil && st.TaskCounts[idempotency.InboxProcessing] == 2
	}, 10*time.Second, time.Millisecond)

	clock.Advance(30 * time.Second) // k2's lease has 60 s left: Timeout exactly
	close(release["k1"])
	require.Equal(t, "k2", recv(t, started, "k2's attempt"))
	rec, found, err := a.Lookup(t.Context(), task.ID("k2"))
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, 1, rec.Attempt)
	require.Equal(t, t0, rec.AttemptedAt, "attempted under the lease it was queued with, not given back")
}
