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
	h, err := s.in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	s.deliver = func(id string) {
		t.Helper()
		require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, id, "in_"+id, "acct_1"), testSecret).Outcome)
	}
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
