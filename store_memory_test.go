package idempotency_test

import (
	"context"
	"sync"
	"testing"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/conformance"
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
	conformance.Run(t, func(t *testing.T) conformance.Backend {
		s := idempotency.NewMemoryStore()
		c := &counters{m: make(map[string]int)}
		return conformance.Backend{
			Store:   s,
			Add:     c.add,
			Get:     c.get,
			Waiting: func(testing.TB) int { return idempotency.MemoryWaiting(s) },
		}
	})
}
