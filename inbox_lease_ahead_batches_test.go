package idempotency_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// Run leases ahead into a queue twice as long as the workers that apply,
// and leases in batches of half the queue at least: one free place, left
// by a worker that took the next event, is not worth a lease; two are.
// On both stores, without chained commits (OnResult is set), so that no
// event is taken ahead of the queue.
func TestInboxLeasesAheadInBatches(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			entered := make(chan string, 16)
			release, finish := make(chan struct{}, 16), make(chan struct{})
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(ctx context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
				entered <- ev.ID
				select {
				case <-release:
				case <-finish:
				case <-ctx.Done():
					return ctx.Err()
				}
				return nil
			})
			// On the process's clock: the first two attempts are held
			// until the test's last steps, and the queued events wait for
			// a worker as long, all of it well within Timeout, and
			// within Lease less Timeout, which a busy machine's 30 s
			// (the defaults') could not promise.
			in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
				Workers: 2, IngestWorkers: 2, PollInterval: time.Hour, PollOnly: true, Logger: discardLogger(),
				Timeout: time.Minute, Lease: 3 * time.Minute,
				OnResult: func(idempotency.Result) {}, // no chained commit: nothing is taken ahead of the queue
			})
			require.NoError(t, err)
			h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			for i := range 9 {
				id := fmt.Sprintf("evt_batch_%d", i)
				require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, id, "in_"+id, "acct_1"), testSecret).Outcome)
			}
			ctx, stop := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- in.Run(ctx) }()
			defer func() {
				close(finish)
				stop()
				require.NoError(t, recv(t, done, "Run"))
			}()
			// processing is how many events are leased once Run waits,
			// after the last attempt to start has taken its event.
			processing := func() int {
				t.Helper()
				require.Eventually(t, func() bool { return idempotency.InboxIdle(in) }, 10*time.Second, time.Millisecond, "Run waits")
				st, err := in.Stats(t.Context())
				require.NoError(t, err)
				return st.Counts[idempotency.InboxProcessing]
			}
			recv(t, entered, "the first attempt")
			recv(t, entered, "the second attempt")
			require.Equal(t, 6, processing(), "two attempts and a queue of four")
			release <- struct{}{}
			recv(t, entered, "the third attempt")
			require.Equal(t, 5, processing(), "one free place: no lease")
			release <- struct{}{}
			recv(t, entered, "the fourth attempt")
			require.Equal(t, 6, processing(), "two free places: a lease of two")
		})
	}
}

// An event a worker took ahead (its transaction begun by the commit of
// the attempt before it, on PostgreSQL) counts as queued: Run does not
// lease past the queue's bound while it waits to be applied.
func TestPgxInboxLeaseAheadCountsEventsTakenAhead(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	p := newPgInbox(t, b, idempotency.InboxConfig{Workers: 1, IngestWorkers: 1, PollInterval: time.Hour, PollOnly: true})
	for i := range 4 {
		p.deliver(t, fmt.Sprintf("evt_ahead_%d", i), fmt.Sprintf("in_ahead_%d", i), int64(i))
	}
	held, release := make(chan struct{}), make(chan struct{})
	p.onResult = func(r idempotency.Result) {
		if r.EventID == "evt_ahead_0" { // committed; evt_ahead_1 was taken ahead meanwhile
			close(held)
			<-release
		}
	}
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.inbox.Run(ctx) }()
	released := false
	defer func() {
		if !released {
			close(release)
		}
		stop()
		require.NoError(t, recv(t, done, "Run"))
	}()
	recv(t, held, "the end of evt_ahead_0's attempt")
	p.deliver(t, "evt_ahead_new", "in_ahead_new", 9) // wakes Run
	require.Eventually(t, func() bool { return idempotency.InboxIdle(p.inbox) }, 10*time.Second, time.Millisecond, "Run waits")
	st, err := p.inbox.Stats(t.Context())
	require.NoError(t, err)
	require.Equal(t, 2, st.Counts[idempotency.InboxProcessing], "the event taken ahead and one queued: the queue's two places")
	close(release)
	released = true
	require.Eventually(t, func() bool {
		st, err := p.inbox.Stats(t.Context())
		return err == nil && st.Counts[idempotency.InboxProcessed] == 5
	}, 30*time.Second, time.Millisecond)
}
