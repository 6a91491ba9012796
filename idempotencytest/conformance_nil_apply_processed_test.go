package idempotencytest_test

import (
	"context"
	"testing"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

func init() {
	brokenStores["nil-apply-always-ignored"] = func(s *idempotency.MemoryStore) idempotencytest.LookupStore {
		return nilApplyIgnoredStore{s}
	}
}

// nilApplyIgnoredStore breaks Claim.Outcome's contract ("what Run
// records, and reports, when apply is nil: OutcomeIgnored, or
// OutcomeProcessed for any other value"): it records every claim with a
// nil apply as ignored.
type nilApplyIgnoredStore struct{ *idempotency.MemoryStore }

func (s nilApplyIgnoredStore) Run(ctx context.Context, c idempotency.Claim, apply idempotency.ApplyFunc) (idempotency.Outcome, error) {
	if apply == nil {
		c.Outcome = idempotency.OutcomeIgnored
	}
	return s.MemoryStore.Run(ctx, c, apply)
}

// TestConformanceNilApplyProcessed: NilApplyRecordsClaim tried a nil
// apply with Claim.Outcome OutcomeIgnored only, so a store that recorded
// every such claim as ignored, processed ones included, passed it.
func TestConformanceNilApplyProcessed(t *testing.T) {
	t.Parallel()
	requireSuiteCatches(t, "nil-apply-always-ignored", "NilApplyRecordsClaim")
}
