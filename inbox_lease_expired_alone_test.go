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

// An event whose worker died holding it may be what killed its process.
// Run attempts it alone: while that attempt runs, Run leases nothing
// else, so that if it kills this process too, no other event dies with
// it and has an attempt counted for it.
func TestInboxRunLeasesNothingBesideAnEventWhoseWorkerDied(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	var dead atomic.Bool // the suspect's first worker died
	started, finish := make(chan struct{}), make(chan struct{})
	applied := make(chan string, 2)
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		if ev.ID == "evt_alone_suspect" {
			if dead.CompareAndSwap(false, true) {
				runtime.Goexit() // its process died
			}
			close(started)
			<-finish
		}
		applied <- ev.ID
		return nil
	})
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
		Now: clock.Now, Workers: 2, IngestWorkers: 2, Lease: time.Minute, Timeout: 10 * time.Second,
		PollInterval: time.Hour, Logger: discardLogger(),
	})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	deliver := func(id string) {
		t.Helper()
		require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, id, "in_"+id, "acct_1"), testSecret).Outcome)
	}
	deliver("evt_alone_suspect")
	workDueDying(t, in)
	clock.Advance(time.Minute + time.Second) // its lease expired
	deliver("evt_alone_other")

	stop := runInbox(t, in)
	defer stop()
	var once sync.Once
	release := func() { once.Do(func() { close(finish) }) }
	defer release() // before stop, when the test fails
	recv(t, started, "the suspect's second attempt")
	require.Eventually(t, func() bool { return idempotency.InboxIdle(in) }, 10*time.Second, time.Millisecond, "Run waits")
	rec, _, err := in.Lookup(t.Context(), "evt_alone_other")
	require.NoError(t, err)
	require.Equal(t, idempotency.InboxPending, rec.State, "not leased while the suspect runs")

	release()
	require.Equal(t, "evt_alone_suspect", recv(t, applied, "the suspect"))
	require.Equal(t, "evt_alone_other", recv(t, applied, "the other event, once the suspect's attempt ended"))
}
