package idempotencytest_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestClock: a Clock reads its start until advanced or set, forward or
// back, and is safe for concurrent use (run with -race).
func TestClock(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := idempotencytest.NewClock(start)
	require.Equal(t, start, c.Now())
	require.Equal(t, start, c.Now(), "it stands still")
	c.Advance(time.Hour)
	require.Equal(t, start.Add(time.Hour), c.Now())
	c.Advance(-2 * time.Hour)
	require.Equal(t, start.Add(-time.Hour), c.Now(), "a negative Advance moves it back")
	c.Set(start.Add(16 * time.Second))
	require.Equal(t, start.Add(16*time.Second), c.Now(), "Set moves it to a time")
	c.Set(start.Add(-time.Hour))
	require.Equal(t, start.Add(-time.Hour), c.Now(), "back too")

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				c.Advance(time.Second)
				_ = c.Now()
			}
		})
	}
	wg.Wait()
	require.Equal(t, start.Add(-time.Hour+400*time.Second), c.Now())
}
