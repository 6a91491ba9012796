package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestShowSaysHowOftenItWasRedriven: show, show -json and list -json say
// how many times an event was redriven and when last ("never" and 0,
// null before the first), each redrive idemctl makes counted (by -id,
// by -type), a dry run not: an event dead-lettered again after a
// redrive, its attempts counted from 0 again, tells that it was tried
// after the fix. Each attempt after a redrive comes a minute later, so
// that the time show gives is the redrive's, not the attempt's.
func TestShowSaysHowOftenItWasRedriven(t *testing.T) {
	t.Parallel()
	clock := idempotencytest.NewClock(time.Now())
	s := newService(t, clock.Now)
	s.deliver(t, "evt_rd", "charge.failed", "ch_rd")
	s.work(t, s.dead)
	check := func(want string, redrives int, rec idempotency.InboxRecord) {
		t.Helper()
		r := idemctl(t, s.db, nil, "show", "evt_rd")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "\n  redriven      "+want+"\n")
		for _, got := range []recordJSON{
			*decode[showJSON](t, idemctl(t, s.db, nil, "show", "-json", "evt_rd")).Inbox,
			decode[listJSON](t, idemctl(t, s.db, nil, "list", "-json", "-type", "charge.failed")).Records[0],
		} {
			require.Equal(t, redrives, got.Redrives)
			if redrives == 0 {
				require.Nil(t, got.RedrivenAt)
				continue
			}
			require.NotNil(t, got.RedrivenAt)
			require.True(t, rec.RedrivenAt.Equal(*got.RedrivenAt), "%s, want %s", got.RedrivenAt, rec.RedrivenAt)
		}
	}
	check("never", 0, idempotency.InboxRecord{})

	r := idemctl(t, s.db, nil, "redrive", "-id", "evt_rd", "-dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	check("never", 0, idempotency.InboxRecord{})

	r = idemctl(t, s.db, nil, "redrive", "-id", "evt_rd")
	require.Equal(t, 0, r.code, r.stderr)
	clock.Advance(time.Minute)
	s.work(t, s.dead)
	rec := s.lookup(t, "evt_rd")
	require.Equal(t, idempotency.InboxDeadLetter, rec.State)
	check("1 time, last "+formatTime(rec.RedrivenAt), 1, rec)

	r = idemctl(t, s.db, nil, "redrive", "-type", "charge.failed")
	require.Equal(t, 0, r.code, r.stderr)
	clock.Advance(time.Minute)
	s.work(t, s.dead)
	rec = s.lookup(t, "evt_rd")
	require.Equal(t, idempotency.InboxDeadLetter, rec.State)
	require.Equal(t, 1, rec.Attempt, "its attempts counted from 0 again")
	check("2 times, last "+formatTime(rec.RedrivenAt), 2, rec)
}
