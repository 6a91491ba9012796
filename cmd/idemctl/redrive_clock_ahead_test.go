package main

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRedriveOnTheDatabasesClock: idemctl run on a machine whose clock is
// an hour ahead of the database's (the workers' clock: Run warns when
// one is more than a second from it) redrives a dead letter due now by the database's clock,
// not an hour from now, so that a worker takes it at once, and dates its
// redrive and the ages stats shows by that clock.
func TestRedriveOnTheDatabasesClock(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)
	ahead := func() time.Time { return time.Now().Add(time.Hour) }
	idemctlAhead := func(args ...string) string {
		t.Helper()
		r := idemctlAt(t.Context(), ahead, s.db, nil, args...)
		require.Equal(t, 0, r.code, r.stderr)
		return r.stdout
	}

	out := idemctlAhead("stats")
	require.Regexp(t, regexp.MustCompile(`(?m)^last attempt: \S+ \((\d|[1-5]\d)s ago\)$`), out, "aged on the database's clock")

	idemctlAhead("redrive", "-id", "evt_dead_1")
	rec := s.lookup(t, "evt_dead_1")
	require.Equal(t, idempotency.InboxPending, rec.State)
	require.WithinDuration(t, time.Now(), rec.NextAttemptAt, time.Minute, "due now by the database's clock")
	require.WithinDuration(t, time.Now(), rec.RedrivenAt, time.Minute)
	s.work(t, s.dead)
	require.Equal(t, idempotency.InboxDeadLetter, s.lookup(t, "evt_dead_1").State, "attempted at once by a worker on the database's clock (and dead-lettered again: charge.failed always fails)")
	require.Equal(t, 1, s.lookup(t, "evt_dead_1").Attempt)
}
