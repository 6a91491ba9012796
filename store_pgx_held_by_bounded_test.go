package idempotency_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxInboxHeldByBounded: of an object with many events, HeldBy names
// the first 100 unfinished events that sort before the held one and the
// first 100 after it that workers hold, each part in the object's order.
func TestPgxInboxHeldByBounded(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	base := time.Now().UTC().Truncate(time.Second)
	insertInboxRows(t, b, base, "evt_before", "event", "in_many", "pending", 1, 101)
	insertInboxRows(t, b, base, "evt_held", "event", "in_many", "pending", 500, 1)
	insertInboxRows(t, b, base, "evt_after", "event", "in_many", "processing", 1000, 101) // leased for a day
	in, err := idempotency.NewInbox(b.store, idempotency.NewHandlers(), idempotency.InboxConfig{PollOnly: true, Logger: discardLogger()})
	require.NoError(t, err)

	hs, err := in.HeldBy(t.Context(), "evt_held_500")
	require.NoError(t, err)
	var want, got []string
	for g := 1; g <= 100; g++ {
		want = append(want, fmt.Sprintf("evt_before_%d", g))
	}
	for g := 1000; g < 1100; g++ {
		want = append(want, fmt.Sprintf("evt_after_%d", g))
	}
	for _, h := range hs {
		got = append(got, h.EventID)
	}
	require.Equal(t, want, got)
}
