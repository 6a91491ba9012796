package idempotencytest_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestV1EventsTypeWildcardIsStarOnly: type takes * as its one wildcard,
// as the Events API does (any run of characters, dots included); every
// other character is itself, so that ?, [...] and \ match only
// themselves and list no event, rather than the patterns of path.Match.
func TestV1EventsTypeWildcardIsStarOnly(t *testing.T) {
	t.Parallel()
	f := idempotencytest.NewV1Events()
	f.Add(snapshot(t, "evt_paid", "invoice.paid", "", 100))
	f.Add(snapshot(t, "evt_failed", "invoice.payment_failed", "", 101))
	f.Add(snapshot(t, "evt_customer", "customer.created", "", 102))
	for pattern, want := range map[string][]string{
		"invoice.paid":         {"evt_paid"},
		"invoice.*":            {"evt_failed", "evt_paid"},
		"*":                    {"evt_customer", "evt_failed", "evt_paid"},
		"*.paid":               {"evt_paid"},
		"invoice.pa*":          {"evt_failed", "evt_paid"},
		"*payment*":            {"evt_failed"},
		"invoice.*.paid":       nil,
		"invoice.?aid":         nil,
		"invoice.[p]aid":       nil,
		"invoice.[a-z]aid":     nil,
		`invoice\.paid`:        nil,
		"invoice.[":            nil,
		"invoice.paid.*":       nil,
		"customer.created*":    {"evt_customer"},
		"**.created":           {"evt_customer"},
		"invoice.payment_fail": nil,
	} {
		status, listed, _, stripeErr := listV1(t, f, "type="+url.QueryEscape(pattern), "")
		require.Equal(t, http.StatusOK, status, "%s: %v", pattern, stripeErr)
		require.Equal(t, want, listed, pattern)
	}
}
