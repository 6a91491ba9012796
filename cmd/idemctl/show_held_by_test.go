package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestShowHeldBy: show names the events of its object that an event waits
// behind (Inbox.HeldBy), with their state, attempts and next attempt or
// lease, in text and in -json; one held by nothing says so, and a final
// one has no such line.
func TestShowHeldBy(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)
	s.deliver(t, "evt_a_fails", "charge.failed", "ch_9")
	s.work(t, s.inbox)
	s.deliver(t, "evt_b_waits", "invoice.paid", "ch_9")
	blocker := s.lookup(t, "evt_a_fails")
	require.Equal(t, idempotency.InboxFailed, blocker.State)

	r := idemctl(t, s.db, nil, "show", "evt_b_waits")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^  held by\s+evt_a_fails \(failed, attempt 1, next attempt `+
		formatTime(blocker.NextAttemptAt)+`; created before it\)$`, r.stdout)

	r = idemctl(t, s.db, nil, "show", "evt_a_fails")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^  held by\s+- \(nothing: due at its next attempt\)$`, r.stdout)

	r = idemctl(t, s.db, nil, "show", "evt_paid_1")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, "held by", "a processed event waits on nothing")

	doc := decode[showJSON](t, idemctl(t, s.db, nil, "show", "-json", "evt_b_waits"))
	require.Len(t, doc.HeldBy, 1)
	h := doc.HeldBy[0]
	require.Equal(t, "evt_a_fails", h.ID)
	require.Equal(t, "failed", h.State)
	require.Equal(t, 1, h.Attempts)
	require.True(t, h.Earlier)
	require.Nil(t, h.LeaseUntil)
	require.NotNil(t, h.NextAttemptAt)
	require.True(t, h.NextAttemptAt.Equal(blocker.NextAttemptAt))
	require.Contains(t, h.LastError, "downstream refused the charge")

	doc = decode[showJSON](t, idemctl(t, s.db, nil, "show", "-json", "evt_paid_1"))
	require.NotNil(t, doc.HeldBy, "held_by is a list, empty when nothing holds the event")
	require.Empty(t, doc.HeldBy)
}
