package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/ci"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestChaosShort makes a small chaos run on a throwaway cluster: 1,500
// deliveries from 8 senders, a fault every ~1 s, one of each kind, the
// workers' leases 15 s (attempts 10 s), and requires every check to hold.
func TestChaosShort(t *testing.T) {
	t.Parallel()
	testChaosShort(t, 1500, false,
		[]string{faultKillWorker, faultRestartFast, faultKillReceiver, faultTerminateConns, faultRestartNow})
}

// TestChaosShortThroughPgBouncer is TestChaosShort with the servers
// behind PgBouncer in transaction pooling mode (-pgbouncer), 1,000
// deliveries, and PgBouncer's faults in its round: KILL and RECONNECT
// from its console, and its restart. A missing PgBouncer skips it, or fails it with
// CI=true.
func TestChaosShortThroughPgBouncer(t *testing.T) {
	t.Parallel()
	testChaosShort(t, 1000, true,
		[]string{faultKillWorker, faultBouncerKill, faultRestartFast, faultKillReceiver, faultBouncerRestart, faultBouncerRecon, faultTerminateConns, faultRestartNow})
}

// testChaosShort runs n deliveries with one round of faults, the kinds
// in faults (each once, in this order), the servers through PgBouncer
// when pgbouncer, and requires every check to hold.
func testChaosShort(t *testing.T, n int, pgbouncer bool, faults []string) {
	if testing.Short() {
		t.Skip("a chaos run takes a minute and more")
	}
	var out bytes.Buffer
	res, err := execute(t.Context(), config{
		n: n, c: 8, workers: 8, accounts: 50, dup: 0.20, twin: 0.05,
		faultEvery: time.Second, drainTimeout: 3 * time.Minute, retryFor: 2 * time.Minute,
		// The killed worker's events are taken over once its leases
		// expire: 15 s, not the default minute. An attempt has 10 s: with
		// 3 s, attempts that timed out on a busy machine, beside the
		// faults, could push an event's next attempt (attempt⁴ s) past
		// the drain.
		lease: 15 * time.Second, attemptTimeout: 10 * time.Second,
		pgbouncer: pgbouncer,
		// One round of faults, the kill of a worker first: the drain
		// waits for its leases once, and not after the sends.
		firstFaults: faults,
		maxFaults:   len(faults),
	}, &out)
	if pgtest.Unavailable(err) && !ci.On() {
		t.Skipf("no PostgreSQL or PgBouncer: %v", err)
	}
	require.NoError(t, err, out.String())
	t.Log(out.String())
	require.True(t, res.OK, out.String())
	for _, kind := range faults {
		require.Positive(t, res.Faults[kind], "fault %s never came\n%s", kind, out.String())
	}
	require.Len(t, res.Checks, 8)
	require.EqualValues(t, n, res.Answered2xx)
}
