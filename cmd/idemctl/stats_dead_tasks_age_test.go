package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestStatsCountsDeadTasksAndAgesInSeconds: stats' "dead letters", in the
// table and in -json, counts dead-lettered tasks too (a task that returned
// Permanent), as Inbox.Stats's Counts and the dead-letter metric do; and
// oldest_pending_age_seconds is in seconds.
func TestStatsCountsDeadTasksAndAgesInSeconds(t *testing.T) {
	t.Parallel()
	db := idempotencytest.Postgres(t)
	deadLetteredTask(t, db, "k")
	s := newServiceOn(t, db, func() time.Time { return time.Now().Add(-10 * time.Minute) })
	s.deliver(t, "evt_waiting", "charge.failed", "ch_waiting") // pending, received 10 minutes ago

	r := idemctl(t, db, nil, "stats")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `(?m)^dead_letter\s+0\s+1$`, r.stdout)
	require.Regexp(t, `(?m)^dead letters: 1$`, r.stdout)
	require.Regexp(t, `(?m)^oldest pending: \S+Z \(1[01]m\d+s ago\)$`, r.stdout)

	doc := decode[statsJSON](t, idemctl(t, db, nil, "stats", "-json"))
	require.Equal(t, 1, doc.DeadLetters)
	require.NotNil(t, doc.OldestAgeSecs)
	require.InDelta(t, 600, *doc.OldestAgeSecs, 60)
}
