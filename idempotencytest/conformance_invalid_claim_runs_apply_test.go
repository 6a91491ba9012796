package idempotencytest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

func init() {
	brokenStores["claim-checked-after-apply"] = func(s *idempotency.MemoryStore) idempotencytest.LookupStore {
		return lateClaimCheckStore{s}
	}
}

// lateClaimCheckStore breaks Store.Run's "A claim with text no store can
// keep fails before anything starts": it runs the handler on a cleaned
// copy of such a claim, then refuses it with ErrInvalidKey, rolling back.
type lateClaimCheckStore struct{ *idempotency.MemoryStore }

func (s lateClaimCheckStore) Run(ctx context.Context, c idempotency.Claim, apply idempotency.ApplyFunc) (idempotency.Outcome, error) {
	bad := claimFault(c)
	if bad == "" || apply == nil {
		return s.MemoryStore.Run(ctx, c, apply)
	}
	clean := c
	clean.EventID = "evt_cleaned_" + fmt.Sprint(len(c.EventID))
	clean.EventType, clean.ObjectID, clean.Account = cleanText(c.EventType), cleanText(c.ObjectID), cleanText(c.Account)
	clean.Guards = nil
	return s.MemoryStore.Run(ctx, clean, func(ctx context.Context, tx idempotency.Tx) error {
		if err := apply(ctx, tx); err != nil {
			return err
		}
		return fmt.Errorf("%w: %s", idempotency.ErrInvalidKey, bad)
	})
}

func cleanText(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "")
}

// claimFault names the field of c that no store can keep, or "".
func claimFault(c idempotency.Claim) string {
	bad := func(s string, key bool) bool {
		return strings.Contains(s, "\x00") || !utf8.ValidString(s) || key && (s == "" || len(s) > 1024)
	}
	switch {
	case bad(c.EventID, true):
		return "Claim.EventID"
	case bad(c.EventType, false):
		return "Claim.EventType"
	case bad(c.ObjectID, false):
		return "Claim.ObjectID"
	case bad(c.Account, false):
		return "Claim.Account"
	}
	for _, g := range c.Guards {
		if bad(g.Scope, true) || bad(g.Key, true) {
			return "Claim.Guards"
		}
	}
	return ""
}

// TestConformanceInvalidClaimRunsNoHandler: TextNoStoreKeeps,
// LongKeysRefusedAlike and BadInput required a claim no store can keep to
// be refused, recorded nowhere and its counter write rolled back, but not
// that the handler never ran: a store that ran it and refused the claim
// at commit passed them, although Store.Run says such a claim "fails
// before anything starts" (and whatever the handler does outside the
// transaction would have been done).
func TestConformanceInvalidClaimRunsNoHandler(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"TextNoStoreKeeps", "LongKeysRefusedAlike", "BadInput"} {
		t.Run(c, func(t *testing.T) {
			t.Parallel()
			requireSuiteCatches(t, "claim-checked-after-apply", c)
		})
	}
}
