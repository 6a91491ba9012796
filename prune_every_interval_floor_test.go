package idempotency_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// stoppingPruner counts its prunes and stops the loop at the first.
type stoppingPruner struct {
	stop  context.CancelFunc
	calls *atomic.Int32
}

func (p stoppingPruner) Prune(context.Context, idempotency.Retention) (idempotency.PruneReport, error) {
	p.calls.Add(1)
	p.stop()
	return idempotency.PruneReport{}, nil
}

// TestPruneEveryIntervalFloor: an interval under a minute is refused
// before the first prune; a minute is accepted. The pruner stops the loop
// when it is called, so a floor that let a short interval through fails
// at once instead of pruning every interval until the suite's timeout.
func TestPruneEveryIntervalFloor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		interval time.Duration
		runs     bool
	}{
		{time.Minute, true},
		{time.Minute - time.Nanosecond, false},
		{time.Second, false},
		{0, false},
		{-time.Hour, false},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		var calls atomic.Int32
		err := idempotency.PruneEvery(ctx, stoppingPruner{stop: cancel, calls: &calls}, idempotency.Retention{}, c.interval, discardLogger())
		cancel()
		if c.runs {
			require.ErrorIs(t, err, context.Canceled, "interval %v", c.interval)
			require.EqualValues(t, 1, calls.Load(), "interval %v: pruned at once", c.interval)
			continue
		}
		require.ErrorContains(t, err, "under a minute", "interval %v", c.interval)
		require.Zero(t, calls.Load(), "interval %v: refused before pruning", c.interval)
	}
}
