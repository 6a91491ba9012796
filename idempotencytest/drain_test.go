package idempotencytest_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// drainCase is an inbox on store whose invoice.paid handler fails the
// first failFirst[invoice] attempts at an invoice (every attempt when -1)
// and enqueues a receipt task that snoozes an hour at its first run.
type drainCase struct {
	inbox *idempotency.Inbox
	clock *idempotencytest.Clock
	h     *idempotency.Handler
	hs    *idempotency.Handlers

	mu       sync.Mutex
	attempts map[string]int // invoice → attempts
	receipts map[string]int // invoice → runs of its task
}

func newDrainCase(t *testing.T, store idempotency.Store, failFirst map[string]int) *drainCase {
	t.Helper()
	c := &drainCase{
		clock:    idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)),
		attempts: map[string]int{}, receipts: map[string]int{},
	}
	hs := idempotency.NewHandlers()
	c.hs = hs
	receipt := idempotency.NewTask(hs, "send-receipt", func(_ context.Context, run idempotency.TaskRun[string]) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.receipts[run.Key]++; c.receipts[run.Key] == 1 {
			return idempotency.Snooze(time.Hour) // the provider's Retry-After
		}
		return nil
	})
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		c.mu.Lock()
		c.attempts[ev.Object.ID]++
		n, fail := c.attempts[ev.Object.ID], failFirst[ev.Object.ID]
		c.mu.Unlock()
		if fail < 0 || n <= fail {
			return errors.New("the ledger is down")
		}
		_, err := receipt.Enqueue(ctx, tx, ev.Object.ID, "billing@example.com")
		return err
	})
	var err error
	c.inbox, err = idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: c.clock.Now, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	c.h, err = c.inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	return c
}

func (c *drainCase) deliver(t *testing.T, id, invoice string) {
	t.Helper()
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(c.h, invoicePaid(t, id, invoice, "acct_1"), testSecret).Outcome)
}

func (c *drainCase) state(t *testing.T, id string) idempotency.InboxState {
	t.Helper()
	rec, ok, err := c.inbox.Lookup(t.Context(), id)
	require.NoError(t, err)
	require.True(t, ok, id)
	return rec.State
}

func drainStores(t *testing.T) map[string]func() idempotency.Store {
	return map[string]func() idempotency.Store{
		"memory":   func() idempotency.Store { return idempotency.NewMemoryStore() },
		"postgres": func() idempotency.Store { return idempotencytest.Postgres(t).NewStore(t, idempotency.PgxConfig{}) },
	}
}

// Drain moves the fake clock from one due time to the next: an event
// that fails three times is applied at its fourth attempt, its task's
// snooze is waited out, and an event that always fails is dead-lettered
// after the default 20 attempts, about a week of backoff, in one call.
func TestDrainReachesEveryRetry(t *testing.T) {
	t.Parallel()
	for name, store := range drainStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newDrainCase(t, store(), map[string]int{"in_flaky": 3, "in_poison": -1})
			start := c.clock.Now()
			c.deliver(t, "evt_ok", "in_ok")
			c.deliver(t, "evt_flaky", "in_flaky")
			c.deliver(t, "evt_poison", "in_poison")

			n, err := idempotencytest.Drain(t.Context(), c.inbox, c.clock, 8*24*time.Hour)
			require.NoError(t, err)
			// 1 + 4 + 20 attempts at events; two runs of each of two tasks.
			require.Equal(t, 1+4+idempotency.DefaultMaxAttempts+2*2, n)
			require.Equal(t, idempotency.InboxProcessed, c.state(t, "evt_ok"))
			require.Equal(t, idempotency.InboxProcessed, c.state(t, "evt_flaky"))
			require.Equal(t, idempotency.InboxDeadLetter, c.state(t, "evt_poison"))
			c.mu.Lock()
			require.Equal(t, map[string]int{"in_ok": 2, "in_flaky": 2}, c.receipts, "each receipt snoozed once, then sent")
			c.mu.Unlock()
			st, err := c.inbox.Stats(t.Context())
			require.NoError(t, err)
			require.Zero(t, st.Counts[idempotency.InboxPending]+st.Counts[idempotency.InboxFailed]+st.Counts[idempotency.InboxProcessing])
			require.Greater(t, c.clock.Now().Sub(start), 5*24*time.Hour, "the poison event's backoff (6.5 days ±10%), waited out on the fake clock")

			// Nothing left: no attempt, the clock stays.
			at := c.clock.Now()
			n, err = idempotencytest.Drain(t.Context(), c.inbox, c.clock, time.Hour)
			require.NoError(t, err)
			require.Zero(t, n)
			require.Equal(t, at, c.clock.Now())
		})
	}
}

// within bounds how far Drain moves the clock: with a minute, an event
// that always fails gets its attempts at 0, ~1 s and ~17 s, and its next
// (~81 s after the third) is left for later; the clock is not moved past
// the last attempt made. The receipt task of an event received after it,
// listed first, snoozed for an hour, does not make Drain stop early: the
// clock goes to the earliest due time.
func TestDrainStopsAtWithin(t *testing.T) {
	t.Parallel()
	for name, store := range drainStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newDrainCase(t, store(), map[string]int{"in_poison": -1})
			start := c.clock.Now()
			c.deliver(t, "evt_poison", "in_poison")
			c.deliver(t, "evt_ok", "in_ok")
			n, err := idempotencytest.Drain(t.Context(), c.inbox, c.clock, time.Minute)
			require.NoError(t, err)
			require.Equal(t, 3+1+1, n, "three attempts at evt_poison, one at evt_ok and its task")
			require.Equal(t, idempotency.InboxPending, c.state(t, "task:send-receipt:in_ok"), "snoozed past within")
			rec, _, err := c.inbox.Lookup(t.Context(), "evt_poison")
			require.NoError(t, err)
			require.Equal(t, idempotency.InboxFailed, rec.State)
			require.Equal(t, 3, rec.Attempt)
			require.Equal(t, rec.AttemptedAt, c.clock.Now(), "the clock at the last attempt made")
			require.True(t, rec.NextAttemptAt.After(start.Add(time.Minute)))

			// Called again, it goes on from there.
			n, err = idempotencytest.Drain(t.Context(), c.inbox, c.clock, 2*time.Minute)
			require.NoError(t, err)
			require.Equal(t, 1, n)
		})
	}
}

// An event leased by another Inbox whose attempt is still in flight is
// due when that lease ends: Drain moves the clock there, finds it still
// held by the open attempt, and returns without an attempt of its own.
func TestDrainLeaseInFlight(t *testing.T) {
	t.Parallel()
	for name, newStore := range drainStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store := newStore()
			c := newDrainCase(t, store, nil)
			c.deliver(t, "evt_ok", "in_ok")

			started, release := make(chan struct{}), make(chan struct{})
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
				close(started)
				<-release
				return nil
			})
			other, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: c.clock.Now, Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() { _, err := other.WorkDue(context.Background()); done <- err }()
			<-started

			rec, _, err := c.inbox.Lookup(t.Context(), "evt_ok")
			require.NoError(t, err)
			require.Equal(t, idempotency.InboxProcessing, rec.State)
			n, err := idempotencytest.Drain(t.Context(), c.inbox, c.clock, time.Hour)
			close(release)
			require.NoError(t, <-done)
			require.NoError(t, err)
			require.Zero(t, n, "held by the attempt in flight")
			require.Equal(t, rec.LeaseUntil, c.clock.Now(), "the clock moved to the lease's end")
			require.Equal(t, idempotency.InboxProcessed, c.state(t, "evt_ok"), "applied by the attempt in flight")
		})
	}
}

// An inbox that does not read the clock is named as the fault: one on
// the real time beside a clock set to now or to a fixed day in the past
// (its attempt is dated by the real time), and one on another Clock at
// the same time (its attempt dated as the clock's, then the failed event
// comes due on the clock, held by nothing, and WorkDue does not attempt
// it). Where the clock reaches events only held back (behind a failed
// event of their object), Drain returns without an error.
func TestDrainInboxOnAnotherClock(t *testing.T) {
	t.Parallel()
	for name, store := range drainStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct {
				name string
				now  func(c *drainCase) func() time.Time // the inbox's clock; nil: the real time
				set  bool                                // the drain's clock set to the real time first
				says string
			}{
				{name: "real time, clock set to now", set: true, says: "InboxConfig.Now"},
				{name: "real time, clock in the past", says: "the inbox does not read clock"},
				{name: "another Clock", now: func(c *drainCase) func() time.Time { return idempotencytest.NewClock(c.clock.Now()).Now }, says: "evt_flaky is due at"},
			} {
				s := store()
				c := newDrainCase(t, s, map[string]int{"in_flaky": 1})
				cfg := idempotency.InboxConfig{Backoff: func(int) time.Duration { return time.Hour }, Logger: slog.New(slog.DiscardHandler)}
				if tc.now != nil {
					cfg.Now = tc.now(c)
				}
				inbox, err := idempotency.NewInbox(s, c.hs, cfg)
				require.NoError(t, err)
				if tc.set {
					c.clock.Set(time.Now())
				}
				c.deliver(t, "evt_flaky", "in_flaky")

				n, err := idempotencytest.Drain(t.Context(), inbox, c.clock, 2*time.Hour)
				require.ErrorContains(t, err, "set InboxConfig.Now to clock.Now", tc.name)
				require.ErrorContains(t, err, tc.says, tc.name)
				require.Equal(t, 1, n, tc.name)
				require.Equal(t, idempotency.InboxFailed, c.state(t, "evt_flaky"), tc.name)
			}

			// On the inbox's own clock, an event held back behind a failed
			// one of its object is due and not attempted: no error.
			held := newDrainCase(t, store(), map[string]int{"in_held": -1})
			held.deliver(t, "evt_a", "in_held")
			held.deliver(t, "evt_b", "in_held")
			n, err := idempotencytest.Drain(t.Context(), held.inbox, held.clock, time.Minute)
			require.NoError(t, err)
			require.Equal(t, 3, n, "evt_a at 0, ~1 s and ~17 s")
			require.Equal(t, idempotency.InboxPending, held.state(t, "evt_b"))
		})
	}
}

// Bad input is refused with an error and no attempt; a task that snoozes
// for no time at every run ends the call with an error rather than loop.
func TestDrainRefusals(t *testing.T) {
	t.Parallel()
	c := newDrainCase(t, idempotency.NewMemoryStore(), nil)
	c.deliver(t, "evt_ok", "in_ok")
	for _, tc := range []struct {
		inbox  *idempotency.Inbox
		clock  *idempotencytest.Clock
		within time.Duration
		want   string
	}{
		{nil, c.clock, time.Hour, "nil inbox"},
		{c.inbox, nil, time.Hour, "nil clock"},
		{c.inbox, c.clock, 0, "within must be positive"},
		{c.inbox, c.clock, -time.Second, "within must be positive"},
	} {
		n, err := idempotencytest.Drain(t.Context(), tc.inbox, tc.clock, tc.within)
		require.ErrorContains(t, err, tc.want)
		require.Zero(t, n)
	}
	require.Equal(t, idempotency.InboxPending, c.state(t, "evt_ok"), "nothing attempted")

	hs := idempotency.NewHandlers()
	forever := idempotency.NewTask(hs, "poll-status", func(context.Context, idempotency.TaskRun[string]) error {
		return idempotency.Snooze(0)
	})
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		_, err := forever.Enqueue(ctx, tx, ev.Object.ID, "")
		return err
	})
	clock := idempotencytest.NewClock(time.Now())
	inbox, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{Now: clock.Now, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	idempotencytest.Deliver(h, invoicePaid(t, "evt_1", "in_1", "acct_1"), testSecret)
	n, err := idempotencytest.Drain(t.Context(), inbox, clock, time.Hour)
	require.ErrorContains(t, err, "Snooze(0)")
	require.Greater(t, n, 100)
}
