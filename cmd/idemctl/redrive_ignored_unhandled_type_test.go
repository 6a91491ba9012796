package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRedriveIgnoredWithoutTypeHoldsItsObject: with RecordIgnored, the
// ignored events are also those of the types no release handles (Stripe
// sends invoice.created beside invoice.paid). A redrive of ignored events
// by time alone (RedriveFilter.Since, no EventType) takes them too, and
// one redriven less than RetryUnhandledFor after it was received fails
// with ErrNoHandler, holding the later events of its object back, and
// forget refuses it: idemctl redrive refuses that selection
// (TestRedriveIgnoredNeedsTypeOrID). Past RetryUnhandledFor it is recorded
// ignored again, and show prints why.
func TestRedriveIgnoredWithoutTypeHoldsItsObject(t *testing.T) {
	t.Parallel()
	clock := idempotencytest.NewClock(time.Now())
	s := newService(t, clock.Now)
	require.Equal(t, idempotency.OutcomeIgnored, s.deliver(t, "evt_unh_created", "invoice.created", "in_unh"))

	r := idemctl(t, s.db, nil, "redrive", "-state", "ignored", "-since", "1h")
	require.Equal(t, exitUsage, r.code, r.stdout)
	n, err := s.inbox.Redrive(t.Context(), idempotency.RedriveFilter{
		States: []idempotency.InboxState{idempotency.InboxIgnored}, Since: clock.Now().Add(-time.Hour)})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	clock.Advance(2 * time.Second)
	require.Equal(t, idempotency.OutcomeQueued, s.deliver(t, "evt_unh_paid", "invoice.paid", "in_unh"))
	s.work(t, s.inbox)

	created := s.lookup(t, "evt_unh_created")
	require.Equal(t, idempotency.InboxFailed, created.State)
	require.Contains(t, created.LastError, idempotency.ErrNoHandler.Error())
	require.Equal(t, idempotency.InboxPending, s.lookup(t, "evt_unh_paid").State, "held back by the redriven event")
	held, err := s.inbox.HeldBy(t.Context(), "evt_unh_paid")
	require.NoError(t, err)
	require.Len(t, held, 1)
	require.Equal(t, "evt_unh_created", held[0].EventID)
	r = idemctl(t, s.db, nil, "forget", "evt_unh_created")
	require.Equal(t, exitFailed, r.code, r.stderr)

	// Past RetryUnhandledFor, recorded ignored again, saying why: show
	// prints it.
	clock.Advance(time.Hour)
	s.work(t, s.inbox)
	require.Equal(t, idempotency.InboxIgnored, s.lookup(t, "evt_unh_created").State)
	require.Equal(t, idempotency.InboxProcessed, s.lookup(t, "evt_unh_paid").State)
	r = idemctl(t, s.db, nil, "show", "evt_unh_created")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "  last error    idempotency: no handler for the event's type in this process: invoice.created "+
		"(recorded ignored: not applied within RetryUnhandledFor, 1h0m0s, after it was received)\n")
}
