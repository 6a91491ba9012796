package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestShowHeldByProcessing: an event a worker holds, which nothing else
// holds back, is shown held by nothing because a worker holds it under a
// lease, until the lease's end, not "due at its next attempt", which it
// has none of while processing (the runbook reads that line as workers
// down or behind). Once that end is past (its worker died), it says the
// lease expired and the next lease retries it, not that a worker holds
// it; -json has the lease's end as lease_until. A later event of its
// object, held by it, says the same of its lease. Once an earlier event
// of its object came in, the dead worker's event waits behind it: it is
// shown held by that one, and, on a line of its own, that its own lease
// expired and what the next lease does with it. (A worker applying an
// event is held back by nothing: only an expired lease's event can be
// processing and held back, on either store.)
func TestShowHeldByProcessing(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	hs := idempotency.NewHandlers()
	started, release := make(chan struct{}), make(chan struct{})
	idempotency.On(hs, "charge.refunded", func(context.Context, idempotency.Tx, idempotency.Event[json.RawMessage]) error {
		close(started)
		<-release
		return nil
	})
	idempotency.On(hs, "charge.captured", func(context.Context, idempotency.Tx, idempotency.Event[json.RawMessage]) error {
		runtime.Goexit() // the worker dies mid-attempt, as under kill -9
		return nil
	})
	quiet := slog.New(slog.DiscardHandler)
	inbox, err := idempotency.NewInbox(s.store, hs, idempotency.InboxConfig{Logger: quiet})
	require.NoError(t, err)
	hook, err := inbox.Handler(idempotency.Config{Secrets: []string{secret}, Logger: quiet})
	require.NoError(t, err)
	a := idempotencytest.Deliver(hook, eventPayload(t, "evt_running", "charge.refunded", "ch_run", s.clock().Unix()), secret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	worked := make(chan error, 1)
	go func() {
		_, err := inbox.WorkDue(context.Background())
		worked <- err
	}()
	<-started
	running := s.lookup(t, "evt_running")
	r := idemctl(t, s.db, nil, "show", "evt_running")
	close(release)
	require.NoError(t, <-worked)

	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^  state\s+processing$`, r.stdout)
	require.False(t, running.LeaseUntil.IsZero())
	require.Regexp(t, `(?m)^  held by\s+- \(nothing: a worker holds it under a lease until `+regexp.QuoteMeta(formatTime(running.LeaseUntil))+`\)$`, r.stdout)
	require.Equal(t, idempotency.InboxProcessed, s.lookup(t, "evt_running").State)

	// A worker whose clock is an hour behind leases the event for a
	// minute and dies: its lease ended 59 minutes ago by the database's clock.
	behind, err := idempotency.NewInbox(s.store, hs, idempotency.InboxConfig{Logger: quiet,
		Now: func() time.Time { return time.Now().Add(-time.Hour) }})
	require.NoError(t, err)
	hook, err = behind.Handler(idempotency.Config{Secrets: []string{secret}, Logger: quiet})
	require.NoError(t, err)
	a = idempotencytest.Deliver(hook, eventPayload(t, "evt_worker_died", "charge.captured", "ch_died", s.clock().Unix()), secret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	died := make(chan struct{})
	go func() {
		defer close(died)
		_, _ = behind.WorkDue(context.Background())
	}()
	<-died
	dead := s.lookup(t, "evt_worker_died")
	require.Equal(t, idempotency.InboxProcessing, dead.State)
	r = idemctl(t, s.db, nil, "show", "evt_worker_died")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^  held by\s+- \(nothing: its worker's lease expired at `+regexp.QuoteMeta(formatTime(dead.LeaseUntil))+
		`; the next lease retries it, or dead-letters it after its last attempt\)$`, r.stdout)

	doc := decode[showJSON](t, idemctl(t, s.db, nil, "show", "-json", "evt_worker_died"))
	require.NotNil(t, doc.Inbox.LeaseUntil)
	require.True(t, doc.Inbox.LeaseUntil.Equal(dead.LeaseUntil), "lease_until: %v, want %v", doc.Inbox.LeaseUntil, dead.LeaseUntil)
	require.Empty(t, doc.HeldBy)

	// A later event of its object waits behind it: that holder's lease
	// is said to have expired, as the dead event's own line says.
	a = idempotencytest.Deliver(hook, eventPayload(t, "evt_after_death", "charge.captured", "ch_died", s.clock().Unix()+1), secret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	r = idemctl(t, s.db, nil, "show", "evt_after_death")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^  held by\s+evt_worker_died \(processing, attempt 1, lease expired at `+
		regexp.QuoteMeta(formatTime(dead.LeaseUntil))+`; created before it\)$`, r.stdout)

	// An earlier event of its object comes in: the dead worker's event
	// waits behind it.
	a = idempotencytest.Deliver(hook, eventPayload(t, "evt_before_death", "charge.captured", "ch_died", dead.Created.Unix()-1), secret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	r = idemctl(t, s.db, nil, "show", "evt_worker_died")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^  held by\s+evt_before_death \(pending, attempt 0, next attempt \S+; created before it\)$`, r.stdout)
	require.Regexp(t, `(?m)^  lease\s+its worker's lease expired at `+regexp.QuoteMeta(formatTime(dead.LeaseUntil))+
		`; the next lease retries it once nothing holds it back, or dead-letters it after its last attempt without waiting$`, r.stdout)
}
