package idempotencytest_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

func init() {
	brokenStores["received-at-ignored"] = func(s *idempotency.MemoryStore) idempotencytest.LookupStore {
		return receivedAtIgnoredStore{s}
	}
}

// receivedAtIgnoredStore drops Claim.ReceivedAt ("when the delivery
// arrived; zero means now"): every claim is recorded as received when it
// was claimed.
type receivedAtIgnoredStore struct{ *idempotency.MemoryStore }

func (s receivedAtIgnoredStore) Run(ctx context.Context, c idempotency.Claim, apply idempotency.ApplyFunc) (idempotency.Outcome, error) {
	c.ReceivedAt = time.Time{}
	return s.MemoryStore.Run(ctx, c, apply)
}

// TestConformanceClaimReceivedAt: ProcessedCommitsClaimAndWrites checks
// that the claim's fields are recorded, but ran a claim without
// ReceivedAt, so a store that ignored a given ReceivedAt passed it.
func TestConformanceClaimReceivedAt(t *testing.T) {
	t.Parallel()
	requireSuiteCatches(t, "received-at-ignored", "ProcessedCommitsClaimAndWrites")
}
