package idempotencytest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

func init() {
	brokenStores["ping-fails"] = func(s *idempotency.MemoryStore) idempotencytest.LookupStore {
		return pingFailsStore{s}
	}
}

// pingFailsStore breaks Store.Ping ("reports whether the store answers,
// for health checks"): it answers every other call, and Ping fails.
type pingFailsStore struct{ *idempotency.MemoryStore }

func (pingFailsStore) Ping(context.Context) error { return errors.New("ping: no answer") }

// TestConformancePing: RunStoreTests says it checks every guarantee of
// the Store contract, but no case called Ping, so a store whose health
// check always failed (a service that would never count as ready) passed
// the suite.
func TestConformancePing(t *testing.T) {
	t.Parallel()
	requireSuiteCatches(t, "ping-fails", "PingAnswers")
}
