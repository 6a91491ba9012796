package main

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRedriveTasksFailingSaysEventsMoved: without -kind, redrive moves
// the events, then the tasks, one statement each. When the tasks' fails,
// the events have moved already: the error says how many, where it said
// only the store's error, as if nothing had moved.
func TestRedriveTasksFailingSaysEventsMoved(t *testing.T) {
	t.Parallel()
	failed := errors.New("conn closed")
	redrive := func(_ context.Context, f idempotency.RedriveFilter) (int, error) {
		if f.Kind == idempotency.KindTask {
			return 0, failed
		}
		return 3, nil
	}
	for _, dryRun := range []bool{false, true} {
		_, _, err := redriveByKind(context.Background(), redrive, idempotency.RedriveFilter{DryRun: dryRun})
		require.ErrorIs(t, err, failed)
		if dryRun {
			require.ErrorContains(t, err, "would redrive 3 events (dry run: none moved), then the tasks' redrive failed: conn closed")
		} else {
			require.ErrorContains(t, err, "redrove 3 events, then the tasks' redrive failed: conn closed")
		}
	}
}
