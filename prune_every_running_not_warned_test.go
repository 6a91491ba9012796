package idempotency_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// runningPruner answers every prune with ErrPruneRunning, as a PgxStore
// does while another replica's prune holds the lock.
type runningPruner struct{}

func (runningPruner) Prune(context.Context, idempotency.Retention) (idempotency.PruneReport, error) {
	return idempotency.PruneReport{}, idempotency.ErrPruneRunning
}

// levelsHandler records the level of each record and calls stop after the
// first one.
type levelsHandler struct {
	mu     *sync.Mutex
	levels *[]slog.Level
	stop   context.CancelFunc
}

func (h levelsHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h levelsHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.levels = append(*h.levels, r.Level)
	h.stop()
	return nil
}
func (h levelsHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h levelsHandler) WithGroup(string) slog.Handler      { return h }

// TestPruneEveryLeavesWorkToRunningPruneQuietly: PruneEvery runs on every
// replica, and all but one find the prune running at each tick; that is
// the normal case, logged at Debug, not a failure logged at Warn.
func TestPruneEveryLeavesWorkToRunningPruneQuietly(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var mu sync.Mutex
	var levels []slog.Level
	logger := slog.New(levelsHandler{mu: &mu, levels: &levels, stop: cancel})
	err := idempotency.PruneEvery(ctx, runningPruner{}, idempotency.Retention{}, time.Hour, logger)
	require.ErrorIs(t, err, context.Canceled)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []slog.Level{slog.LevelDebug}, levels, "another replica's prune is not a failure")
}
