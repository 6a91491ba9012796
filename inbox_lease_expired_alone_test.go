package idempotency_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// loneSuspect is an inbox under Run whose event evt_suspect's first
// worker died, and whose second attempt has started and blocks until
// release: the event Run leased alone.
type loneSuspect struct {
	in      *idempotency.Inbox
	clock   *idempotencytest.Clock
	deliver func(id string)
	applied chan string // the events applied, in order
	release func()      // ends the suspect's attempt
}

func newLoneSuspect(t *testing.T) *loneSuspect {
	store := idempotency.NewMemoryStore()
	s := &loneSuspect{clock: idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)), applied: make(chan string, 2)}
	var dead atomic.Bool // the suspect's first worker died
	started, finish := make(chan struct{}), make(chan struct{})
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		if ev.ID == "evt_suspect" {
			if dead.CompareAndSwap(false, true) {
				runtime.Goexit() // its process died
			}
			close(started)
			<-finish // its context ignored
		}
		s.applied <- ev.ID
		return nil
	})
	var err error
	s.in, err = idempotency.NewInbox(store, hs, idempotency.InboxConfig{
		Now: s.clock.Now, Workers: 2, IngestWorkers: 2, Lease: time.Minute, Timeout: 10 * time.Second,
		PollInterval: time.Hour, Logger: discardLogger(),
	})
	require.NoError(t, err)
	s.deliver = invoiceDeliverer(t, s.in)
	s.deliver("evt_suspect")
	workDueDying(t, s.in)
	s.clock.Advance(time.Minute + time.Second) // its lease expired

	t.Cleanup(runInbox(t, s.in))
	var once sync.Once
	s.release = func() { once.Do(func() { close(finish) }) }
	t.Cleanup(s.release) // before Run is stopped, when the test fails
	recv(t, started, "the suspect's second attempt")
	return s
}

// invoiceDeliverer returns what delivers an invoice.paid event, of its own
// invoice, through in's Handler, and requires it queued.
func invoiceDeliverer(t *testing.T, in *idempotency.Inbox) func(id string) {
	t.Helper()
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	return func(id string) {
		t.Helper()
		require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, id, "in_"+id, "acct_1"), testSecret).Outcome)
	}
}

// An event whose worker died holding it may be what killed its process.
// Run attempts it alone: while that attempt runs, Run leases nothing
// else, so that if it kills this process too, no other event dies with
// it and has an attempt counted for it.
func TestInboxRunLeasesNothingBesideAnEventWhoseWorkerDied(t *testing.T) {
	t.Parallel()
	s := newLoneSuspect(t)
	s.deliver("evt_other")
	require.Eventually(t, func() bool { return idempotency.InboxIdle(s.in) }, 10*time.Second, time.Millisecond, "Run waits")
	rec, _, err := s.in.Lookup(t.Context(), "evt_other")
	require.NoError(t, err)
	require.Equal(t, idempotency.InboxPending, rec.State, "not leased while the suspect runs")

	s.release()
	require.Equal(t, "evt_suspect", recv(t, s.applied, "the suspect"))
	require.Equal(t, "evt_other", recv(t, s.applied, "the other event, once the suspect's attempt ended"))
}

// Run leases nothing beside such an event for as long as its new lease
// lasts, no longer: an attempt that outlasts it (a handler that ignores
// its context) holds its worker, as any hung attempt does, and not the
// whole process.
func TestInboxRunLeasesAgainWhenTheLoneEventsLeaseEnds(t *testing.T) {
	t.Parallel()
	s := newLoneSuspect(t)
	s.clock.Advance(time.Minute) // its lease has ended; its attempt goes on
	s.deliver("evt_other")       // wakes Run
	require.Equal(t, "evt_other", recv(t, s.applied, "the other event, while the suspect's attempt hangs"))
	s.release()
	require.Equal(t, "evt_suspect", recv(t, s.applied, "the suspect"))
}

// Leased alone, such an event is attempted alone too: the events Run
// leased before it, still queued or being applied when it came, are
// applied first. Started beside them, it would take them down with it if
// it kills this process too, each with an attempt counted, as a worker
// that died holding them.
func TestInboxRunAttemptsAnEventWhoseWorkerDiedOnceTheOthersEnded(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	var dead, slowRunning atomic.Bool
	slowStarted, releaseSlow, suspectStarted := make(chan struct{}), make(chan struct{}), make(chan struct{})
	beside := make(chan bool, 1) // whether evt_slow's attempt ran as the suspect's started
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		switch ev.ID {
		case "evt_suspect":
			if dead.CompareAndSwap(false, true) {
				runtime.Goexit() // its process died
			}
			beside <- slowRunning.Load()
			close(suspectStarted)
		case "evt_slow":
			close(slowStarted)
			select {
			case <-releaseSlow:
			case <-suspectStarted:
			}
		}
		return nil
	})
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
		Now: clock.Now, Workers: 2, IngestWorkers: 2, Lease: time.Minute, Timeout: 10 * time.Second,
		PollInterval: time.Hour, Logger: discardLogger(),
		OnResult: func(r idempotency.Result) {
			if r.EventID == "evt_slow" {
				slowRunning.Store(false) // its attempt has ended
			}
		},
	})
	require.NoError(t, err)
	deliver := invoiceDeliverer(t, in)
	deliver("evt_suspect")
	workDueDying(t, in) // its lease runs until 12:01

	clock.Advance(50 * time.Second)
	slowRunning.Store(true)
	deliver("evt_slow")
	t.Cleanup(runInbox(t, in))
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(releaseSlow) }) }) // before Run is stopped, when the test fails
	recv(t, slowStarted, "evt_slow's attempt")

	clock.Advance(11 * time.Second) // the suspect's lease expired; evt_slow's runs until 12:01:50
	deliver("evt_other")            // wakes Run, which leases the suspect alone
	require.Eventually(t, func() bool { return idempotency.InboxIdle(in) }, 10*time.Second, time.Millisecond, "Run waits")
	once.Do(func() { close(releaseSlow) })
	require.False(t, recv(t, beside, "the suspect's attempt"), "the suspect was attempted while evt_slow's attempt ran")
}

// Held back behind an attempt that hangs (its handler ignores its
// context), such an event is attempted while its lease still lets an
// attempt start, and still alone: Run leases nothing beside it. Held
// until its lease ran short, it would be given back untried and leased
// again as any other event, beside others, or, with no wake, expire and
// have an attempt counted that never ran.
func TestInboxRunAttemptsAHeldEventWithinItsLeaseBesideAHungAttempt(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	var dead atomic.Bool
	slowStarted, suspectStarted, finish := make(chan struct{}), make(chan struct{}), make(chan struct{})
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		switch ev.ID {
		case "evt_suspect":
			if dead.CompareAndSwap(false, true) {
				runtime.Goexit() // its process died
			}
			close(suspectStarted)
			<-finish
		case "evt_slow":
			close(slowStarted)
			<-finish // its context ignored
		}
		return nil
	})
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
		Now: clock.Now, Workers: 2, IngestWorkers: 2, Lease: time.Minute, Timeout: 10 * time.Second,
		PollInterval: time.Hour, Logger: discardLogger(),
	})
	require.NoError(t, err)
	deliver := invoiceDeliverer(t, in)
	deliver("evt_suspect")
	workDueDying(t, in) // its lease runs until 12:01

	clock.Advance(50 * time.Second)
	deliver("evt_slow")
	t.Cleanup(runInbox(t, in))
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(finish) }) }) // before Run is stopped
	recv(t, slowStarted, "evt_slow's attempt")

	clock.Advance(11 * time.Second) // the suspect's lease expired
	deliver("evt_other")            // wakes Run, which leases the suspect alone, until 12:02:01
	require.Eventually(t, func() bool { return idempotency.InboxIdle(in) }, 10*time.Second, time.Millisecond, "Run waits")

	// 12:01:41: an attempt started now ends within the suspect's lease;
	// evt_slow's attempt still hangs.
	clock.Advance(40 * time.Second)
	deliver("evt_later") // wakes Run
	recv(t, suspectStarted, "the suspect's attempt, within its lease")
	require.Eventually(t, func() bool { return idempotency.InboxIdle(in) }, 10*time.Second, time.Millisecond, "Run waits")
	for _, id := range []string{"evt_other", "evt_later"} {
		rec, _, err := in.Lookup(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, idempotency.InboxPending, rec.State, "%s leased beside the suspect", id)
	}
	rec, _, err := in.Lookup(t.Context(), "evt_suspect")
	require.NoError(t, err)
	require.Equal(t, idempotency.InboxProcessing, rec.State)
	require.Equal(t, 2, rec.Attempt)
}
