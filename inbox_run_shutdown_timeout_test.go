package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxRunSaysWhatItsShutdownTimeoutCut: Run returns an error
// wrapping ErrShutdownTimeout, saying how many attempts it cancelled, when
// attempts were still in flight at ShutdownTimeout, even when their
// handlers, ignoring the cancellation for a while, return nil after it
// (each is rolled back and recorded failed all the same); and nil when the
// attempts in flight at the stop all finished before it, or had applied
// their events and were being reported as it passed. Both stores. Run
// returned nil either way, and a caller could only guess from the clock.
// (An idle Run returns nil: TestInboxRunStopsIdleAtOnce.)
func TestInboxRunSaysWhatItsShutdownTimeoutCut(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"memory", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			newStore := func(t *testing.T) idempotency.Store {
				if name == "postgres" {
					return newPgBackend(t, idempotency.PgxConfig{}).store
				}
				return idempotency.NewMemoryStore()
			}
			t.Run("cut", func(t *testing.T) {
				t.Parallel()
				in, entered, cancelled, release := shutdownInbox(t, newStore(t), 10*time.Millisecond)
				deliver := invoiceDeliverer(t, in)
				deliver("evt_cut_1")
				deliver("evt_cut_2")
				ctx, stop := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- in.Run(ctx) }()
				recv(t, entered, "the first attempt")
				recv(t, entered, "the second attempt")
				stop()
				recv(t, cancelled, "the first attempt cancelled at ShutdownTimeout")
				recv(t, cancelled, "the second attempt cancelled at ShutdownTimeout")
				close(release) // both return nil, past the deadline

				err := recv(t, done, "Run")
				require.ErrorIs(t, err, idempotency.ErrShutdownTimeout)
				require.EqualError(t, err, "idempotency: Inbox.Run: attempts still in flight at InboxConfig.ShutdownTimeout cancelled: 2 attempts, 10ms after the stop; each is retried")
				for _, id := range []string{"evt_cut_1", "evt_cut_2"} {
					rec, ok, err := in.Lookup(t.Context(), id)
					require.NoError(t, err)
					require.True(t, ok)
					require.Equal(t, idempotency.InboxFailed, rec.State, "%s rolled back and recorded failed", id)
					require.Equal(t, 1, rec.Attempt)
				}
			})
			t.Run("in time", func(t *testing.T) {
				t.Parallel()
				in, entered, _, release := shutdownInbox(t, newStore(t), time.Minute)
				invoiceDeliverer(t, in)("evt_in_time")
				ctx, stop := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- in.Run(ctx) }()
				recv(t, entered, "the attempt")
				stop()
				close(release) // in flight at the stop, it ends within ShutdownTimeout

				require.NoError(t, recv(t, done, "Run"))
				rec, ok, err := in.Lookup(t.Context(), "evt_in_time")
				require.NoError(t, err)
				require.True(t, ok)
				require.Equal(t, idempotency.InboxProcessed, rec.State)
			})
			t.Run("applied, reported at the cut", func(t *testing.T) {
				// Its event committed; its report (here the Observer's
				// done) still runs when ShutdownTimeout passes. Applied,
				// it is not retried, and not counted.
				t.Parallel()
				reporting := make(chan struct{})
				hs := idempotency.NewHandlers()
				idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
				clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
				in, err := idempotency.NewInbox(newStore(t), hs, idempotency.InboxConfig{
					Workers: 1, Now: clock.Now, Logger: discardLogger(), PollInterval: time.Hour, PollOnly: true,
					ShutdownTimeout: 10 * time.Millisecond,
					Observer: &idempotency.Observer{Attempt: func(ctx context.Context, _ idempotency.InboxRecord, _ string) (context.Context, func(idempotency.Result)) {
						return ctx, func(idempotency.Result) {
							close(reporting) // the attempt's end is recorded
							<-ctx.Done()     // Run's cut, ShutdownTimeout after the stop
						}
					}},
				})
				require.NoError(t, err)
				invoiceDeliverer(t, in)("evt_applied")
				ctx, stop := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- in.Run(ctx) }()
				recv(t, reporting, "the attempt's report")
				stop()

				require.NoError(t, recv(t, done, "Run"), "the attempt applied its event before the cut")
				rec, ok, err := in.Lookup(t.Context(), "evt_applied")
				require.NoError(t, err)
				require.True(t, ok)
				require.Equal(t, idempotency.InboxProcessed, rec.State)
			})
		})
	}
}

// shutdownInbox is an inbox on store, on a clock that stands still, with
// two workers and shutdownTimeout, whose invoice.paid handler sends on
// entered as it starts, on cancelled once its context is done, and
// returns nil once release is closed, whether its context is done or not.
func shutdownInbox(t *testing.T, store idempotency.Store, shutdownTimeout time.Duration) (in *idempotency.Inbox, entered, cancelled chan string, release chan struct{}) {
	t.Helper()
	entered, cancelled, release = make(chan string, 2), make(chan string, 2), make(chan struct{})
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		entered <- ev.ID
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			cancelled <- ev.ID
		}
		<-release // ignores the cancellation for a while
		return nil
	})
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
		Workers: 2, IngestWorkers: 2, Now: clock.Now, Logger: discardLogger(),
		PollInterval: time.Hour, PollOnly: true, ShutdownTimeout: shutdownTimeout,
	})
	require.NoError(t, err)
	return in, entered, cancelled, release
}
