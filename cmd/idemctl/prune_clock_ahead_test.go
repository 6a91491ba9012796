package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestPruneWindowsOnTheDatabasesClock: idemctl prune run on a machine
// whose clock is two days ahead of the database's measures the windows on
// the database's clock, the workers' (Run warns when one is more than a
// second from it): an event finished six days ago is within the 7 days of payloads,
// and neither it nor its task's arguments are pruned, where by that
// machine's clock it finished eight days ago.
func TestPruneWindowsOnTheDatabasesClock(t *testing.T) {
	t.Parallel()
	clock := idempotencytest.NewClock(time.Now().Add(-6 * 24 * time.Hour))
	s := newService(t, clock.Now)
	s.deliver(t, "evt_six_days", "invoice.paid", "in_1")
	s.work(t, s.inbox)
	s.work(t, s.inbox) // its receipt task

	ahead := func() time.Time { return time.Now().Add(2 * 24 * time.Hour) }
	r := idemctlAt(t.Context(), ahead, s.db, nil, "prune", "-dry-run", "-json", "-quiet")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, pruneJSON{DryRun: true}, decode[pruneJSON](t, r), "nothing is older than its window by the database's clock")
}
