package idempotency_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// counters is a business table for the memory store: writes made in a
// transaction apply on its commit, through AfterCommit, as a user's fake
// would do it.
type counters struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counters) add(_ context.Context, tx idempotency.Tx, name string, delta int) error {
	tx.AfterCommit(func(context.Context) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.m[name] += delta
	})
	return nil
}

func (c *counters) get(_ testing.TB, name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[name]
}

func TestMemoryStoreConformance(t *testing.T) {
	t.Parallel()
	idempotencytest.RunStoreTests(t, func(t *testing.T) idempotencytest.StoreBackend {
		s := idempotency.NewMemoryStore()
		c := &counters{m: make(map[string]int)}
		return idempotencytest.StoreBackend{
			Store:   s,
			Add:     c.add,
			Get:     c.get,
			Waiting: func(testing.TB) int { return idempotency.MemoryWaiting(s) },
		}
	})
}

// TestMemorySwallowedDeadlockFailsTheCommit: a handler that ignores a
// deadlock error cannot commit, as PostgreSQL answers the commit of an
// aborted transaction with a rollback.
func TestMemorySwallowedDeadlockFailsTheCommit(t *testing.T) {
	t.Parallel()
	s := idempotency.NewMemoryStore()
	held, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := s.Run(t.Context(), idempotency.Claim{EventID: "evt_a"}, func(ctx context.Context, tx idempotency.Tx) error {
			if _, err := tx.Guard(ctx, "k", "a"); err != nil {
				return err
			}
			close(held)
			<-release
			_, err := tx.Guard(ctx, "k", "b") // waits for evt_b
			return err
		})
		done <- err
	}()
	<-held
	attempts := 0
	out, err := s.Run(t.Context(), idempotency.Claim{EventID: "evt_b"}, func(ctx context.Context, tx idempotency.Tx) error {
		attempts++
		if _, err := tx.Guard(ctx, "k", "b"); err != nil {
			return err
		}
		if attempts == 1 {
			close(release)
			require.Eventually(t, func() bool { return idempotency.MemoryWaiting(s) == 1 }, 10*time.Second, time.Millisecond)
		}
		_, _ = tx.Guard(ctx, "k", "a") // the deadlock, swallowed
		return nil
	})
	require.Error(t, err)
	require.Equal(t, idempotency.OutcomeFailed, out)
	require.Equal(t, 1, attempts, "an aborted transaction is not retried")
	require.NoError(t, <-done)
}

// An AfterCommit func that runs another event's transaction on the same
// CheckOrder key does not wait for the transaction that ran it, on either
// store: PostgreSQL released the key at the commit, and the MemoryStore
// now does too (it waited for itself, for ever without a deadline).
func TestAfterCommitRunsOnTheKeysItsTransactionHeld(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var inner idempotency.Outcome
			var innerErr error
			out, err := store.Run(t.Context(), idempotency.Claim{EventID: "evt_first", EventType: "customer.updated"}, func(ctx context.Context, tx idempotency.Tx) error {
				tx.AfterCommit(func(ctx context.Context) {
					ctx, cancel := context.WithTimeout(ctx, 10*time.Second) // the deadlock's bound
					defer cancel()
					inner, innerErr = store.Run(ctx, idempotency.Claim{EventID: "evt_second", EventType: "customer.updated"}, func(ctx context.Context, tx idempotency.Tx) error {
						order, err := idempotency.CheckOrder(ctx, tx, "customer", "cus_1", time.Unix(1756742401, 0))
						if err == nil && order != idempotency.OrderNewer {
							return fmt.Errorf("order %v, want newer", order)
						}
						return err
					})
				})
				_, err := idempotency.CheckOrder(ctx, tx, "customer", "cus_1", time.Unix(1756742400, 0))
				return err
			})
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeProcessed, out)
			require.NoError(t, innerErr)
			require.Equal(t, idempotency.OutcomeProcessed, inner)
		})
	}
}
