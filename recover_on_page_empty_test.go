package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverOnPageOnlyForPagesWithEvents: OnPage is called after each
// page of events, not after the empty page that ends a walk, nor for a run
// that lists no event. (No test failed when it was called for empty pages
// too, with the report unchanged.)
func TestRecoverOnPageOnlyForPagesWithEvents(t *testing.T) {
	t.Parallel()
	f := newFakeStripe()
	client := f.serve(t)
	now := time.Now()
	h := newService(t, "memory").handler(t)
	var pages []idempotency.RecoverReport
	opts := idempotency.RecoverOptions{
		Since: now.Add(-2 * time.Hour), RequestsPerSecond: 100,
		OnPage: func(rep idempotency.RecoverReport) { pages = append(pages, rep) },
	}
	rep, err := h.Recover(t.Context(), client, opts)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Requests)
	require.Empty(t, pages, "no event listed")

	addPaidEvents(t, f, "on-page", 3, now)
	rep, err = h.Recover(t.Context(), client, opts)
	require.NoError(t, err)
	require.Equal(t, 2, rep.Requests, "a page of three events, and the empty page after it")
	require.Len(t, pages, 1)
	require.Equal(t, 3, pages[0].Processed)
	require.Equal(t, paidEventID("on-page", 2), pages[0].LastEventID)
}
