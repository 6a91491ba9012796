package idempotency_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverTakesTheBoundsThemselves: the bounds of the options are
// inclusive: 20 types and pages of 100 are what the Events API takes, and
// reach it as asked; a Since at Now is not in the future, and recovers
// what was created in its second.
func TestRecoverTakesTheBoundsThemselves(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	f := newFakeStripe()
	client := f.serve(t)
	now := time.Now().Truncate(time.Second)
	f.add(snapshotEvent(t, "evt_bounds_now", "invoice.paid", "in_bounds_now", now.Unix()))
	h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), RecordIgnored: true})
	require.NoError(t, err)
	types := []string{"invoice.paid"}
	for i := range 19 {
		types = append(types, fmt.Sprintf("bounds.type_%02d", i))
	}
	rep, err := h.Recover(t.Context(), client, idempotency.RecoverOptions{
		Since: now, Now: func() time.Time { return now }, Types: types, PageSize: 100, RequestsPerSecond: 100,
	})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Processed)
	calls := f.calls()
	require.NotEmpty(t, calls)
	require.Equal(t, "100", calls[0].Query.Get("limit"))
	require.Equal(t, "invoice.paid", calls[0].Query.Get("types[19]"), "20 types, sorted")
}

// TestRecoverEndsAtTheLastPage: a page without more after it ends the
// walk; no request follows it. A resumed run over 15 new events, created
// after the RecoveryOverlap behind its checkpoint, in pages of 10, ends at
// the page of the last 5; one with nothing new lists the overlap again,
// ends at its last page, and calls OnPage for no page without events.
func TestRecoverEndsAtTheLastPage(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	f := newFakeStripe()
	client := f.serve(t)
	now := time.Now()
	addPaidEvents(t, f, "last_page_a", 3, now)
	h := app.handler(t)
	opts := idempotency.RecoverOptions{Since: now.Add(-2 * time.Hour), Checkpoint: "last-page", PageSize: 10, RequestsPerSecond: 100}
	_, err := h.Recover(t.Context(), client, opts)
	require.NoError(t, err)

	addPaidEvents(t, f, "last_page_b", 15, now.Add(2*idempotency.RecoveryOverlap))
	calls := len(f.calls())
	rep, err := h.Recover(t.Context(), client, opts)
	require.NoError(t, err)
	require.True(t, rep.Resumed)
	require.Equal(t, 15, rep.Processed)
	last := f.calls()[len(f.calls())-1]
	require.Equal(t, []string{"evt_last_page_b_14", "evt_last_page_b_13", "evt_last_page_b_12", "evt_last_page_b_11", "evt_last_page_b_10"}, last.Listed, "ends at the page of the last 5")
	require.False(t, last.HasMore)
	require.Equal(t, rep.Requests, len(f.calls())-calls)

	listed := 0
	opts.OnPage = func(rep idempotency.RecoverReport) {
		if rep.Listed == listed {
			t.Error("OnPage called for a page without events")
		}
		listed = rep.Listed
	}
	rep, err = h.Recover(t.Context(), client, opts)
	require.NoError(t, err)
	require.Zero(t, rep.Processed, "nothing new")
	last = f.calls()[len(f.calls())-1]
	require.False(t, last.HasMore, "ends at a page without more")
	require.Equal(t, 15, rep.Duplicate, "the overlap behind the checkpoint, listed again")
}
