package idempotency_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPruneStopsDuringPause: a prune whose context is done while it
// pauses after a batch returns at once with what it committed, not after
// the pause. The pause is an hour: a prune that sat it out fails the
// test's own deadline.
func TestPruneStopsDuringPause(t *testing.T) {
	t.Parallel()
	s := idempotency.NewMemoryStore()
	for i := range 2 {
		_, err := s.Run(t.Context(), idempotency.Claim{EventID: "evt_" + strconv.Itoa(i), EventType: "invoice.paid"}, nil)
		require.NoError(t, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r := idempotency.Retention{BatchSize: 1, Pause: time.Hour, Now: func() time.Time { return time.Now().Add(46 * 24 * time.Hour) },
		OnBatch: func(idempotency.PruneReport) { cancel() }}
	type result struct {
		rep idempotency.PruneReport
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := s.Prune(ctx, r)
		done <- result{rep, err}
	}()
	got := recv(t, done, "Prune, cancelled during its pause")
	require.ErrorIs(t, got.err, context.Canceled)
	require.Equal(t, idempotency.PruneReport{EventIDs: 1}, got.rep)
}

// TestPruneStopsBetweenBatches: with no pause, a prune whose context is
// done after a batch runs no other batch, on either store.
func TestPruneStopsBetweenBatches(t *testing.T) {
	t.Parallel()
	for name, s := range bothPruners(t) {
		for i := range 3 {
			_, err := s.Run(t.Context(), idempotency.Claim{EventID: "evt_" + strconv.Itoa(i), EventType: "invoice.paid"}, nil)
			require.NoError(t, err, name)
		}
		ctx, cancel := context.WithCancel(t.Context())
		r := idempotency.Retention{BatchSize: 1, Pause: -1, Now: func() time.Time { return time.Now().Add(46 * 24 * time.Hour) },
			OnBatch: func(idempotency.PruneReport) { cancel() }}
		rep, err := s.Prune(ctx, r)
		cancel()
		require.ErrorIs(t, err, context.Canceled, name)
		require.Equal(t, idempotency.PruneReport{EventIDs: 1}, rep, "%s: one batch, then stopped", name)
	}
}
