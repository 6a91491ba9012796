package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestStatsAgeNeverNegative: an event stored by a replica whose clock is
// ahead of idemctl's machine was received "in the future"; stats gives
// its age as 0, in the table and in -json, not a negative age that an
// alert's "older than" would read as fresh.
func TestStatsAgeNeverNegative(t *testing.T) {
	t.Parallel()
	db := idempotencytest.Postgres(t)
	s := newServiceOn(t, db, func() time.Time { return time.Now().Add(10 * time.Minute) })
	s.deliver(t, "evt_ahead", "charge.failed", "ch_ahead") // pending, received 10 minutes from now

	r := idemctl(t, db, nil, "stats")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `(?m)^oldest pending: \S+Z \(0s ago\)$`, r.stdout)

	doc := decode[statsJSON](t, idemctl(t, db, nil, "stats", "-json"))
	require.NotNil(t, doc.OldestAgeSecs)
	require.Equal(t, int64(0), *doc.OldestAgeSecs)
}
