package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxRunSaysWhatItsShutdownTimeoutCut: Run returns an error
// wrapping ErrShutdownTimeout, saying how many attempts it cancelled, when
// attempts were still in flight at ShutdownTimeout, even when their
// handlers, ignoring the cancellation for a while, return nil after it
// (each is rolled back and recorded failed all the same, dead-lettered at
// its last attempt, or its end not recorded when another process took its
// expired lease over meanwhile: each counted); and nil when the
// attempts in flight at the stop all finished before it, or had applied
// their events, or failed on their own, and were being reported as it
// passed. Both stores. Run returned nil either way, and a caller could
// only guess from the clock.
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
				in, entered, cancelled, release := shutdownInbox(t, newStore(t), idempotency.InboxConfig{Workers: 2, IngestWorkers: 2, ShutdownTimeout: 10 * time.Millisecond})
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
				require.EqualError(t, err, "idempotency: Inbox.Run: attempts still in flight at InboxConfig.ShutdownTimeout cancelled: 2 attempts, 10ms after the stop; each is retried, or dead-lettered at its last attempt")
				for _, id := range []string{"evt_cut_1", "evt_cut_2"} {
					rec, ok, err := in.Lookup(t.Context(), id)
					require.NoError(t, err)
					require.True(t, ok)
					require.Equal(t, idempotency.InboxFailed, rec.State, "%s rolled back and recorded failed", id)
					require.Equal(t, 1, rec.Attempt)
				}
			})
			t.Run("cut at the last attempt", func(t *testing.T) {
				// Cut at MaxAttempts, it is dead-lettered, not retried:
				// the cut left it unapplied all the same, and it is
				// counted.
				t.Parallel()
				in, entered, cancelled, release := shutdownInbox(t, newStore(t), idempotency.InboxConfig{Workers: 1, MaxAttempts: 1, ShutdownTimeout: 10 * time.Millisecond})
				stop, done := runUntilEntered(t, in, entered, "evt_cut_last")
				stop()
				recv(t, cancelled, "the attempt cancelled at ShutdownTimeout")
				close(release)

				err := recv(t, done, "Run")
				require.ErrorIs(t, err, idempotency.ErrShutdownTimeout)
				require.ErrorContains(t, err, ": 1 attempt, 10ms after the stop")
				requireInboxState(t, in, "evt_cut_last", idempotency.InboxDeadLetter)
			})
			t.Run("cut, its lease taken over", func(t *testing.T) {
				// Cut, it rolled back; then, its lease expired, another
				// process took the event over before it recorded its
				// failure, which it could not record. Its end unrecorded,
				// the cut left it unapplied all the same, and it is
				// counted.
				t.Parallel()
				store := newStore(t)
				// The settle, once armed, runs at the next reading of the
				// cut attempt's clock: after its rollback, before it
				// records its failure.
				clock := newArmedClock()
				in, entered, cancelled, release := shutdownInbox(t, store, idempotency.InboxConfig{
					Workers: 1, Lease: time.Minute, ShutdownTimeout: 10 * time.Millisecond, Now: clock.Now,
				})
				newer, err := idempotency.NewInbox(store, idempotency.NewHandlers(), idempotency.InboxConfig{
					Lease: time.Minute, Now: clock.Clock.Now, Logger: discardLogger(),
				})
				require.NoError(t, err)
				stop, done := runUntilEntered(t, in, entered, "evt_cut_taken_over")
				stop()
				recv(t, cancelled, "the attempt cancelled at ShutdownTimeout")
				settles, takenOver := make(chan struct{}), make(chan struct{})
				clock.arm(func() {
					close(settles)
					<-takenOver
				})
				close(release)

				recv(t, settles, "the cut attempt's settle")
				clock.Advance(2 * time.Minute) // its lease expires
				var taken []idempotency.InboxLeased
				// On PostgreSQL the session of the attempt's transaction
				// may hold the row a moment longer.
				require.Eventually(t, func() bool {
					taken, err = idempotency.LeaseInbox(t.Context(), newer, 1)
					return err != nil || len(taken) == 1
				}, 10*time.Second, time.Millisecond, "the event's expired lease taken over")
				require.NoError(t, err)
				require.Equal(t, 2, taken[0].Attempt())
				close(takenOver)

				err = recv(t, done, "Run")
				require.ErrorIs(t, err, idempotency.ErrShutdownTimeout)
				require.ErrorContains(t, err, ": 1 attempt, 10ms after the stop")
				rec := requireInboxState(t, in, "evt_cut_taken_over", idempotency.InboxProcessing) // held by the attempt that took it over
				require.Equal(t, 2, rec.Attempt)
			})
			t.Run("in time", func(t *testing.T) {
				t.Parallel()
				in, entered, _, release := shutdownInbox(t, newStore(t), idempotency.InboxConfig{Workers: 2, IngestWorkers: 2, ShutdownTimeout: time.Minute})
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
				in, _, _, release := shutdownInbox(t, newStore(t), idempotency.InboxConfig{
					Workers: 1, ShutdownTimeout: 10 * time.Millisecond,
					Observer: reportedAtTheCut(reporting),
				})
				close(release) // the handler returns at once
				rec, err := stopWhileReported(t, in, reporting, "evt_applied")
				require.NoError(t, err, "the attempt applied its event before the cut")
				require.Equal(t, idempotency.InboxProcessed, rec.State)
			})
			t.Run("failed before the cut, reported at it", func(t *testing.T) {
				// Its handler failed, and its failure was recorded,
				// before ShutdownTimeout passed; its report (the
				// Observer's done) still runs then. The cut left it
				// nothing to undo: its own failure has it retried, and
				// it is not counted.
				t.Parallel()
				reporting := make(chan struct{})
				hs := idempotency.NewHandlers()
				idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
					return errors.New("the downstream refused it")
				})
				in, err := idempotency.NewInbox(newStore(t), hs, idempotency.InboxConfig{
					Workers: 1, ShutdownTimeout: 10 * time.Millisecond,
					Logger: discardLogger(), PollInterval: time.Hour, PollOnly: true,
					Now:      idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)).Now,
					Observer: reportedAtTheCut(reporting),
				})
				require.NoError(t, err)
				rec, err := stopWhileReported(t, in, reporting, "evt_failed")
				require.NoError(t, err, "the attempt failed on its own before the cut")
				require.Equal(t, idempotency.InboxFailed, rec.State)
				require.Equal(t, "the downstream refused it", rec.LastError)
			})
		})
	}
}

// reportedAtTheCut is an Observer whose done, called once an attempt's
// end is recorded, closes reporting, then returns at Run's cut, when
// ShutdownTimeout has passed after the stop.
func reportedAtTheCut(reporting chan struct{}) *idempotency.Observer {
	return &idempotency.Observer{Attempt: func(ctx context.Context, _ idempotency.InboxRecord, _ string) (context.Context, func(idempotency.Result)) {
		return ctx, func(idempotency.Result) {
			close(reporting)
			<-ctx.Done()
		}
	}}
}

// stopWhileReported delivers eventID to in, runs in and stops it once
// the attempt's report began (reporting, see reportedAtTheCut); it
// returns the event's record and Run's answer.
func stopWhileReported(t *testing.T, in *idempotency.Inbox, reporting <-chan struct{}, eventID string) (idempotency.InboxRecord, error) {
	t.Helper()
	invoiceDeliverer(t, in)(eventID)
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	recv(t, reporting, "the attempt's report")
	stop()
	err := recv(t, done, "Run")
	rec, ok, lookupErr := in.Lookup(t.Context(), eventID)
	require.NoError(t, lookupErr)
	require.True(t, ok)
	return rec, err
}

// TestInboxRunShutdownTimeoutCountsNoGiveBack: an event a worker gives
// back untried, as too little of its lease was left when the worker took
// it, is no attempt: when ShutdownTimeout then cuts the attempt that took
// it again, Run's error counts that one attempt, not two. Both stores.
// The lease is on the fake clock; Timeout is on the process's and bounds
// evt_gb_first's attempt, held until the test releases it: 10 s, so that
// it does not run out first on a busy machine.
func TestInboxRunShutdownTimeoutCountsNoGiveBack(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			in, entered, cancelled, release := shutdownInbox(t, store, idempotency.InboxConfig{
				Workers: 1, IngestWorkers: 1, Timeout: 10 * time.Second, Lease: 20 * time.Second,
				ShutdownTimeout: 10 * time.Millisecond, Now: clock.Now,
			})
			stop, done := runUntilEntered(t, in, entered, "evt_gb_first", "evt_gb_queued")
			clock.Advance(12 * time.Second) // 8s of evt_gb_queued's lease left, less than Timeout
			release <- struct{}{}           // evt_gb_first returns; evt_gb_queued is given back, leased again and attempted
			require.Equal(t, "evt_gb_queued", recv(t, entered, "the attempt after the give-back"))
			stop()
			require.Equal(t, "evt_gb_queued", recv(t, cancelled, "the attempt cancelled at ShutdownTimeout"))
			close(release)

			err := recv(t, done, "Run")
			require.ErrorIs(t, err, idempotency.ErrShutdownTimeout)
			require.ErrorContains(t, err, ": 1 attempt, 10ms after the stop", "the give-back is not counted")
			rec, ok, err := in.Lookup(t.Context(), "evt_gb_queued")
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, idempotency.InboxFailed, rec.State)
			require.Equal(t, 1, rec.Attempt, "the give-back counts for nothing")
		})
	}
}

// TestInboxRunShutdownTimeoutWithNothingToCut: when ShutdownTimeout
// passes while no attempt runs, a worker only giving an event back (its
// UPDATE waiting for a row lock another transaction holds, until the
// give-back's own deadline), Run cancels nothing and returns nil, as
// http.Server.Shutdown returns nil when no connection was left to cut.
// PostgreSQL: only a lock held past the deadline keeps a give-back from
// returning. The give-back's deadline is Timeout, at most 5 s: with a
// Timeout of 1 s, a busy machine could see it pass before the test saw
// the give-back wait, and the test never saw it.
func TestInboxRunShutdownTimeoutWithNothingToCut(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	in, entered, _, release := shutdownInbox(t, b.store, idempotency.InboxConfig{
		Workers: 1, IngestWorkers: 1, Timeout: 10 * time.Second, Lease: 20 * time.Second,
		ShutdownTimeout: 10 * time.Millisecond, Now: clock.Now,
	})
	stop, done := runUntilEntered(t, in, entered, "evt_nc_first", "evt_nc_queued")
	locker, err := b.db.Pool.Begin(t.Context())
	require.NoError(t, err)
	defer rollbackTx(locker)
	_, err = locker.Exec(t.Context(), `SELECT 1 FROM `+pgx.Identifier{b.db.Schema, "idempotency_inbox"}.Sanitize()+` WHERE event_id = $1 FOR UPDATE`, "evt_nc_queued")
	require.NoError(t, err)
	clock.Advance(15 * time.Second) // 5s of evt_nc_queued's lease left, less than Timeout
	release <- struct{}{}           // evt_nc_first returns; the worker gives evt_nc_queued back
	require.Eventually(t, func() bool { return b.waiting(t) == 1 }, 10*time.Second, time.Millisecond, "the give-back waits for the row")
	stop() // ShutdownTimeout passes long before the give-back gives up, after 5 s

	require.NoError(t, recv(t, done, "Run"), "no attempt was cut")
}

// runUntilEntered delivers eventIDs to in, runs in until stop is called,
// and returns once the attempt at the first has entered its handler (with
// one worker, the others leased with it and waiting behind it); done
// gives Run's answer.
func runUntilEntered(t *testing.T, in *idempotency.Inbox, entered <-chan string, eventIDs ...string) (stop context.CancelFunc, done <-chan error) {
	t.Helper()
	deliver := invoiceDeliverer(t, in)
	for _, id := range eventIDs {
		deliver(id)
	}
	ctx, stop := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- in.Run(ctx) }()
	require.Equal(t, eventIDs[0], recv(t, entered, "the first attempt"))
	return stop, ran
}

// shutdownInbox is an inbox on store with cfg, a clock that stands still
// unless cfg has its own, polling only (once an hour), whose invoice.paid
// handler sends on entered as it starts, on cancelled once its context is
// done, and returns nil once it receives from release (or release is
// closed), whether its context is done or not.
func shutdownInbox(t *testing.T, store idempotency.Store, cfg idempotency.InboxConfig) (in *idempotency.Inbox, entered, cancelled chan string, release chan struct{}) {
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
	if cfg.Now == nil {
		cfg.Now = idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)).Now
	}
	cfg.Logger, cfg.PollInterval, cfg.PollOnly = discardLogger(), time.Hour, true
	in, err := idempotency.NewInbox(store, hs, cfg)
	require.NoError(t, err)
	return in, entered, cancelled, release
}
