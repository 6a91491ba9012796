package display_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/display"
)

// TestTextsQuoteTheDefaults: the retention defaults that Unknown and
// EmptyInbox quote, written by hand (the root package imports this one),
// are Retention's, so that a default changed without them fails here.
func TestTextsQuoteTheDefaults(t *testing.T) {
	t.Parallel()
	days := func(d time.Duration) time.Duration {
		t.Helper()
		const day = 24 * time.Hour
		require.Zero(t, d%day, "%s is no whole number of days", d)
		return d / day
	}
	require.Contains(t, display.Unknown, fmt.Sprintf("(kept Retention.EventIDs, %d days by default)", days(idempotency.DefaultEventIDRetention)))
	require.Contains(t, display.EmptyInbox("search an event's id"),
		fmt.Sprintf("received in the last Retention.Payloads (%d days by default)", days(idempotency.DefaultPayloadRetention)))
}
