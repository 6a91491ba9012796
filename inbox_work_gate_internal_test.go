package idempotency

import (
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// TestWorkGateEnterWaitsAtTheLimit: a worker that enters a full gate
// waits for one inside to leave. (No test failed when enter let one
// worker past the limit in: stay sent it out again, and it spun in and
// out of the gate while the others applied.)
func TestWorkGateEnterWaitsAtTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newWorkGate(1)
		g.enter()
		var in atomic.Bool
		go func() {
			g.enter()
			in.Store(true)
		}()
		synctest.Wait()
		require.False(t, in.Load(), "entered a full gate")
		require.False(t, g.over())
		g.leave()
		synctest.Wait()
		require.True(t, in.Load(), "let in once the other left")
		g.leave()
	})
}
