package idempotency_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// skewReplica is one replica of an inbox on a shared PostgreSQL schema,
// on a clock of its own.
type skewReplica struct {
	in    *idempotency.Inbox
	h     *idempotency.Handler
	clock *idempotencytest.Clock
	logs  *syncBuffer
}

// skewReplicas are two replicas, b on a clock at start and a on one ahead
// of it by skew, of one inbox whose invoice.paid handler adds 1 to the
// counter named after the event and fails while fail says so.
func skewReplicas(t *testing.T, b *pgBackend, skew time.Duration, cfg idempotency.InboxConfig, fail func(string) bool) (a, r *skewReplica) {
	t.Helper()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	mk := func(at time.Time) *skewReplica {
		store, err := idempotency.NewPgxStore(b.db.Pool, idempotency.PgxConfig{Schema: b.db.Schema})
		require.NoError(t, err)
		hs := idempotency.NewHandlers()
		idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
			if fail != nil && fail(ev.ID) {
				return fmt.Errorf("downstream down")
			}
			return b.add(ctx, tx, ev.ID, 1)
		})
		logger, logs := testLogger()
		c := cfg
		clock := idempotencytest.NewClock(at)
		c.Now, c.Logger = clock.Now, logger
		in, err := idempotency.NewInbox(store, hs, c)
		require.NoError(t, err)
		h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
		require.NoError(t, err)
		return &skewReplica{in: in, h: h, clock: clock, logs: logs}
	}
	return mk(start.Add(skew)), mk(start)
}

func (r *skewReplica) deliver(t *testing.T, eventID string) {
	t.Helper()
	payload := invoicePayload(t, eventID, "in_"+strings.TrimPrefix(eventID, "evt_"), "acct_1")
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(r.h, payload, testSecret).Outcome)
}

func lookup(t *testing.T, in *idempotency.Inbox, eventID string) idempotency.InboxRecord {
	t.Helper()
	rec, ok, err := in.Lookup(t.Context(), eventID)
	require.NoError(t, err)
	require.True(t, ok)
	return rec
}

// Replica a's clock is ahead of replica b's. An event b has leased and not
// yet begun (waiting in its queue) is taken over by a as soon as a's
// clock reaches b's lease's end: at once when the skew is the Lease or
// more, after Lease − skew otherwise. b's attempt then finds its lease
// lost; the event is applied once, by a, at attempt 2. An attempt b has
// begun holds the row: a cannot take it, whatever the skew.
func TestPgxInboxClockSkewTakesLeasesEarly(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	cfg := idempotency.InboxConfig{Lease: time.Minute, Timeout: 30 * time.Second}
	for _, tc := range []struct {
		skew     time.Duration
		takenNow bool
	}{
		{10 * time.Second, false},
		{30 * time.Second, false},
		{59 * time.Second, false},
		{time.Minute, true},
		{5 * time.Minute, true},
	} {
		t.Run(tc.skew.String(), func(t *testing.T) {
			a, r := skewReplicas(t, b, tc.skew, cfg, nil)
			id := "evt_skew_" + strings.ReplaceAll(tc.skew.String(), "m", "_")
			r.deliver(t, id)
			leased, err := idempotency.LeaseInbox(t.Context(), r.in, 1)
			require.NoError(t, err)
			require.Len(t, leased, 1)
			took, err := idempotency.LeaseInbox(t.Context(), a.in, 1)
			require.NoError(t, err)
			t.Logf("skew %s: a leases b's live lease at once: %v", tc.skew, len(took) == 1)
			require.Equal(t, tc.takenNow, len(took) == 1)
			if !tc.takenNow {
				// After Lease − skew of real time, a takes it all the same
				// (b's clock has moved as much: b would still start an
				// attempt while Lease − Timeout − that time is left).
				wait := cfg.Lease - tc.skew
				a.clock.Advance(wait)
				r.clock.Advance(wait)
				took, err = idempotency.LeaseInbox(t.Context(), a.in, 1)
				require.NoError(t, err)
				require.Len(t, took, 1)
				t.Logf("skew %s: taken after %s; b's lease then has %s left on b's clock (b starts an attempt with ≥ Timeout %s left: %v)",
					tc.skew, wait, cfg.Lease-wait, cfg.Timeout, cfg.Lease-wait >= cfg.Timeout)
			}
			require.Equal(t, 2, took[0].Attempt())
			idempotency.ApplyLeased(t.Context(), r.in, leased[0]) // b's late attempt
			require.Contains(t, r.logs.String(), "lease lost to a newer attempt")
			idempotency.ApplyLeased(t.Context(), a.in, took[0])
			require.Contains(t, a.logs.String(), "its lease expired (its worker died, hung or lost its connection, or the clocks of the replicas disagree)")
			require.Equal(t, 1, b.get(t, id), "applied once")
			rec := lookup(t, r.in, id)
			require.Equal(t, idempotency.InboxProcessed, rec.State)
			require.Equal(t, 2, rec.Attempt, "the event never failed and shows 2 attempts")
		})
	}
}

// A skew of the Lease or more dead-letters, with MaxAttempts 1, an event
// that never failed: a's lease finds b's fresh lease expired at its last
// attempt.
func TestPgxInboxClockSkewDeadLettersAtMaxAttempts(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	a, r := skewReplicas(t, b, 2*time.Minute, idempotency.InboxConfig{MaxAttempts: 1}, nil)
	r.deliver(t, "evt_skew_dead")
	leased, err := idempotency.LeaseInbox(t.Context(), r.in, 1)
	require.NoError(t, err)
	require.Len(t, leased, 1)
	took, err := idempotency.LeaseInbox(t.Context(), a.in, 1)
	require.NoError(t, err)
	require.Empty(t, took)
	rec := lookup(t, a.in, "evt_skew_dead")
	require.Equal(t, idempotency.InboxDeadLetter, rec.State)
	require.Equal(t, "lease expired after attempt 1: its worker died, hung or lost its connection, or the clocks of the replicas disagree", rec.LastError,
		"dead-lettered by skew alone: the text names it as a possible cause")
	require.EqualError(t, idempotency.ErrLeaseExpired, "idempotency: lease expired: its worker died, hung or lost its connection, or the clocks of the replicas disagree")
	idempotency.ApplyLeased(t.Context(), r.in, leased[0])
	require.Equal(t, 0, b.get(t, "evt_skew_dead"))
}

// An attempt b has begun holds the event's row for as long as its
// transaction is open: a's lease skips it, whatever the skew.
func TestPgxInboxClockSkewSparesBegunAttempts(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	entered, release := make(chan struct{}), make(chan struct{})
	a, r := skewReplicas(t, b, time.Hour, idempotency.InboxConfig{}, nil)
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		close(entered)
		<-release
		return b.add(ctx, tx, ev.ID, 1)
	})
	slow, err := idempotency.NewInbox(b.store, hs, idempotency.InboxConfig{Now: r.clock.Now, Logger: discardLogger()})
	require.NoError(t, err)
	r.deliver(t, "evt_skew_begun")
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = slow.WorkDue(context.Background())
	}()
	recv(t, entered, "b's attempt")
	took, err := idempotency.LeaseInbox(t.Context(), a.in, 1)
	require.NoError(t, err)
	require.Empty(t, took)
	close(release)
	recv(t, done, "b's attempt's end")
	require.Equal(t, 1, b.get(t, "evt_skew_begun"))
	rec := lookup(t, a.in, "evt_skew_begun")
	require.Equal(t, idempotency.InboxProcessed, rec.State)
	require.Equal(t, 1, rec.Attempt)
}

// A failed event's retry is due on the clock of the replica that
// recorded the failure: a replica ahead by skew retries it skew early,
// at once when skew exceeds the backoff.
func TestPgxInboxClockSkewRetriesEarly(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	failing := true
	cfg := idempotency.InboxConfig{Backoff: func(int) time.Duration { return 10 * time.Second }}
	a, r := skewReplicas(t, b, 15*time.Second, cfg, func(string) bool { return failing })
	r.deliver(t, "evt_skew_retry")
	n, err := r.in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	failing = false
	n, err = r.in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 0, n, "b waits for its backoff")
	n, err = a.in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n, "a, 15 s ahead, retries a 10 s backoff at once")
	require.Equal(t, 1, b.get(t, "evt_skew_retry"))
}

// A replica behind the one that stored an event sees it due only when its
// clock reaches the event's received time: a worker deployment behind its
// receivers by skew applies every event skew late.
func TestPgxInboxClockSkewDelaysEventsOfAReceiverAhead(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	a, r := skewReplicas(t, b, 2*time.Minute, idempotency.InboxConfig{}, nil)
	a.deliver(t, "evt_skew_late")
	n, err := r.in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 0, n, "not due on b's clock")
	r.clock.Advance(2*time.Minute - time.Millisecond)
	n, err = r.in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 0, n)
	r.clock.Advance(time.Millisecond)
	n, err = r.in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// A clock stepped back by m: the events stored before the step are due
// only when the clock is back where it was, m later (and hold the later
// events of their objects back meanwhile), while the events stored after
// it are applied at once; List shows the earlier ones received in the
// future, after the later ones, and Stats dates the oldest pending by the
// later ones. Stepped forward past a lease, the inbox takes its own
// worker's lease over as a dead worker's.
func TestPgxInboxClockSteppedBack(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	_, r := skewReplicas(t, b, 0, idempotency.InboxConfig{Backoff: func(int) time.Duration { return time.Second }}, func(id string) bool {
		return id == "evt_step_failed"
	})
	r.deliver(t, "evt_step_failed")
	n, err := r.in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	r.deliver(t, "evt_step_pending")
	leased, err := idempotency.LeaseInbox(t.Context(), r.in, 1) // the worker then dies
	require.NoError(t, err)
	require.Len(t, leased, 1)
	r.deliver(t, "evt_step_pending2")
	r.clock.Advance(-5 * time.Minute)
	r.deliver(t, "evt_step_after")
	recs, err := r.in.List(t.Context(), idempotency.InboxFilter{})
	require.NoError(t, err)
	for _, rec := range recs {
		t.Logf("%s %s received %s (now %s) next %s", rec.EventID, rec.State, rec.ReceivedAt.Format(time.TimeOnly), r.clock.Now().Format(time.TimeOnly), rec.NextAttemptAt.Format(time.TimeOnly))
	}
	st, err := r.in.Stats(t.Context())
	require.NoError(t, err)
	t.Logf("oldest pending %s, age %s", st.OldestPending.Format(time.TimeOnly), r.clock.Now().Sub(st.OldestPending))
	n, err = r.in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n, "only the event stored after the step")
	require.Equal(t, 1, b.get(t, "evt_step_after"))
	r.clock.Advance(5*time.Minute - time.Millisecond)
	n, err = r.in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 0, n)
	r.clock.Advance(time.Millisecond + time.Second)
	n, err = r.in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 2, n, "pending2 and the retry")
	r.clock.Advance(time.Minute - time.Second)
	n, err = r.in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 2, n, "the dead worker's lease, 5 minutes later than it would have, and the next retry")
}

// A task comes due at the clock of the synchronous Handler that enqueued
// it: an inbox whose clock is behind that Handler's by skew runs it skew
// late; one ahead runs it at once.
func TestPgxInboxClockSkewTaskOfASynchronousHandler(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	hs := idempotency.NewHandlers()
	var ran atomic.Int32
	receipt := idempotency.NewTask(hs, receiptTask, func(context.Context, idempotency.TaskRun[string]) error {
		ran.Add(1)
		return nil
	})
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		_, err := receipt.Enqueue(ctx, tx, ev.Object.ID, ev.ID)
		return err
	})
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	handlerClock := idempotencytest.NewClock(start.Add(time.Minute))
	inboxClock := idempotencytest.NewClock(start)
	h, err := idempotency.NewHandler(b.store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Now: handlerClock.Now})
	require.NoError(t, err)
	in, err := idempotency.NewInbox(b.store, hs, idempotency.InboxConfig{Now: inboxClock.Now, Logger: discardLogger()})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, invoicePayload(t, "evt_skew_task", "in_skew_task", "acct_1"), testSecret).Outcome)
	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 0, n, "due a minute later on the inbox's clock")
	inboxClock.Advance(time.Minute)
	n, err = in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, int32(1), ran.Load())
}
