package idempotency_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxWorkDueAndRunRefuseEachOther: WorkDue, the test driver, refuses
// to run while Run runs on the same Inbox, with an error and no attempt;
// Run refuses to start while a WorkDue runs. Their doc said they must not
// run together, and nothing stopped it: both leased and applied events of
// one inbox side by side, each with its own per-object bookkeeping.
func TestInboxWorkDueAndRunRefuseEachOther(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}, 1), make(chan struct{})
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
		entered <- struct{}{}
		<-release
		return nil
	})
	inbox, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{Logger: discardLogger(), PollInterval: time.Hour})
	require.NoError(t, err)
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)

	// A WorkDue under way: Run refuses to start.
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, "evt_due", "in_due", "acct_1"), testSecret).Outcome)
	type workedDue struct {
		n   int
		err error
	}
	worked := make(chan workedDue, 1)
	go func() { // require's FailNow must run on the test's goroutine
		n, err := inbox.WorkDue(context.Background())
		worked <- workedDue{n, err}
	}()
	<-entered
	done, cancel := context.WithCancel(t.Context())
	cancel() // Run returns at once either way
	require.ErrorContains(t, inbox.Run(done), "WorkDue is running on this Inbox")
	// A refused Run never reads as running (Inbox.Running, the gauge of
	// workers that run): its mark against WorkDue is not that.
	var seen atomic.Bool
	watched, watching := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-watching:
				return
			default:
				if inbox.Running() {
					seen.Store(true)
				}
			}
		}
	}()
	for range 5000 {
		require.Error(t, inbox.Run(done))
	}
	close(watching)
	<-watched
	require.False(t, seen.Load(), "Running while a Run was refused")
	close(release)
	w := <-worked
	require.NoError(t, w.err)
	require.Equal(t, 1, w.n)

	// Run running: WorkDue refuses, and attempts nothing.
	stop := runInbox(t, inbox)
	defer stop()
	require.Eventually(t, func() bool { return idempotency.InboxIdle(inbox) }, 10*time.Second, time.Millisecond, "Run waits")
	n, err := inbox.WorkDue(t.Context())
	require.ErrorContains(t, err, "Run is running on this Inbox")
	require.Zero(t, n)
}
