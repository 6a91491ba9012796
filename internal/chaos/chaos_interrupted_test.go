package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/ci"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestChaosInterruptedLeavesNothing: a run stopped (SIGINT) while it
// sends and injects faults returns errInterrupted, and leaves no process
// of its own: no server, restarted or not, and no cluster (its watchdog,
// a child that lives until the cluster is removed, is gone too).
//
// Not parallel: it counts the test binary's child processes, which the
// other tests start too; they wait until it is done.
func TestChaosInterruptedLeavesNothing(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to read child processes from")
	}
	if testing.Short() {
		t.Skip("a chaos run takes a while")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := &cancelAt{line: "sent ", cancel: cancel} // the first progress line: 5 s of sends and faults
	_, err := execute(ctx, config{
		n: 1_000_000, c: 4, workers: 2, accounts: 10, dup: 0.20, twin: 0.05,
		faultEvery: 500 * time.Millisecond, drainTimeout: time.Minute, retryFor: time.Minute,
		firstFaults: []string{faultKillReceiver, faultKillWorker, faultTerminateConns, faultRestartFast, faultRestartNow},
	}, out)
	if pgtest.Unavailable(err) && !ci.On() {
		t.Skipf("no PostgreSQL: %v", err)
	}
	require.ErrorIs(t, err, errInterrupted, out.String())
	// The run keeps the servers' logs, for a run interrupted because it
	// hung; this one's are of no use.
	_, kept, found := strings.Cut(out.String(), keptLine)
	require.True(t, found, out.String())
	dir, _, _ := strings.Cut(kept, "\n")
	require.NoError(t, os.RemoveAll(filepath.Dir(dir)))
	require.Empty(t, childProcesses(t), "processes left by the run\n%s", out.String())
}

// cancelAt is an io.Writer that keeps what is written and calls cancel
// once a line starting with line is written.
type cancelAt struct {
	line   string
	cancel func()

	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *cancelAt) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.HasPrefix(p, []byte(w.line)) {
		w.cancel()
	}
	return w.buf.Write(p)
}

func (w *cancelAt) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// childProcesses returns the pid and name of each of this process's
// children.
func childProcesses(t *testing.T) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	require.NoError(t, err)
	self := strconv.Itoa(os.Getpid())
	var children []string
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // it exited meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) > 1 && fields[1] == self {
			children = append(children, string(b[:bytes.LastIndexByte(b, ')')+1])) // pid (comm): no flag's secret
		}
	}
	return children
}
