package main

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDurationBesideTimeOrderedOnTheDatabasesClock: a duration in -since
// beside a time in -until (or the other way round) is ordered on the
// database's clock, which the selection measures the duration on, not on
// the clock of the machine idemctl runs on: an hour ahead, -since 30m
// -until a quarter of an hour from now is a range that holds the events
// received a moment ago, and an hour behind, -since 30m -until 45 minutes
// ago holds no time and is refused (exit 2), naming the bounds on the
// database's clock.
func TestDurationBesideTimeOrderedOnTheDatabasesClock(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t) // every event received a moment ago by the database's clock
	soon := time.Now().Add(15 * time.Minute).UTC().Format(time.RFC3339)

	r := idemctlSkewed(t, time.Hour, s.db, nil, "list", "-kind", "event", "-since", "30m", "-until", soon, "-json")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Len(t, decode[listJSON](t, r).Records, 5, "list: the seeded events")

	r = idemctlSkewed(t, time.Hour, s.db, nil, "ledger", "-since", "30m", "-until", soon, "-json")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.NotEmpty(t, decode[ledgerListJSON](t, r).Records, "ledger")

	r = idemctlSkewed(t, time.Hour, s.db, nil, "redrive", "-state", "dead_letter", "-since", "30m", "-until", soon, "-dry-run", "-json")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, 1, decode[redriveJSON](t, r).Events, "redrive: evt_dead_1")

	before := time.Now().Add(-45 * time.Minute).UTC().Truncate(time.Second)
	r = idemctlSkewed(t, -time.Hour, s.db, nil, "list", "-since", "30m", "-until", before.Format(time.RFC3339))
	require.Equal(t, exitUsage, r.code, r.stderr)
	m := regexp.MustCompile(`-since \((\S+)\) is not before -until \((\S+)\)`).FindStringSubmatch(r.stderr)
	require.NotNil(t, m, r.stderr)
	since, err := time.Parse(time.RFC3339, m[1])
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(-30*time.Minute), since, time.Minute, "30m before the database's clock")
	require.Equal(t, before.Format(time.RFC3339), m[2])
	require.Empty(t, r.stdout)
	r = idemctlSkewed(t, -time.Hour, s.db, nil, "redrive", "-since", before.Format(time.RFC3339), "-until", "30m", "-dry-run")
	require.Equal(t, exitOK, r.code, "a time before the duration on the database's clock: "+r.stderr)
}
