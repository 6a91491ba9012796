package idempotencytest_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

func init() {
	brokenStores["guard-claimed-at-zero"] = func(s *idempotency.MemoryStore) idempotencytest.LookupStore {
		return guardClaimedAtZeroStore{s}
	}
}

// guardClaimedAtZeroStore loses GuardRecord.ClaimedAt: LookupGuard answers
// every other field of the committed claim, and a zero time.
type guardClaimedAtZeroStore struct{ *idempotency.MemoryStore }

func (s guardClaimedAtZeroStore) LookupGuard(ctx context.Context, scope, key string) (idempotency.GuardRecord, bool, error) {
	rec, ok, err := s.MemoryStore.LookupGuard(ctx, scope, key)
	rec.ClaimedAt = time.Time{}
	return rec, ok, err
}

// TestConformanceGuardClaimedAt: GuardFirstOnce checks the record
// LookupGuard returns, but only its scope, key and event id, so a store
// that lost when the key was claimed passed it.
func TestConformanceGuardClaimedAt(t *testing.T) {
	t.Parallel()
	requireSuiteCatches(t, "guard-claimed-at-zero", "GuardFirstOnce")
}
