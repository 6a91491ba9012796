package idempotency_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// Promises of "Workers that die" and "Order" under a real SIGKILL, by the
// worker process of TestPgxInboxFaultWorkerKilled (TestHelperInboxWorker:
// its handler hangs inside the event's transaction, under a lease of a
// minute, which the parent's clock passes: pastHelperLease).

// TestPgxInboxFaultKilledWorkerHoldsItsObject kills a worker process while
// it applies the first event of an invoice; the invoice's second event
// (created a second later) arrives after the kill. The dead worker's lease
// still holds the object: until it expires the parent's WorkDue applies
// nothing and HeldBy names the first event as what holds the second back;
// then the parent applies the first event (attempt 2), and the second
// after it, never before.
func TestPgxInboxFaultKilledWorkerHoldsItsObject(t *testing.T) {
	t.Parallel()
	a := newFaultApp(t)
	clock := idempotencytest.NewClock(time.Now())
	p := a.process(t, "parent", idempotency.InboxConfig{Lease: 12 * time.Second, Timeout: 10 * time.Second, PollInterval: 100 * time.Millisecond, Now: clock.Now})
	first := faultEvent{ID: "evt_held_1", Type: "invoice.paid", Invoice: "in_held", Account: "acct_held"}
	second := faultEvent{ID: "evt_held_2", Type: "invoice.payment_succeeded", Invoice: "in_held", Account: "acct_held", Created: 1}
	a.sendAll(t, []http.Handler{p.handler}, []faultEvent{first}, 1)

	w := a.startHelperWorker(t, "TestHelperInboxWorker", helperWorkerEntered)
	w.await(t, "its handler")
	w.kill(t)
	a.sendAll(t, []http.Handler{p.handler}, []faultEvent{second}, 1)
	require.Equal(t, idempotency.InboxProcessing, a.record(t, first.ID).State, "the dead worker's lease")

	// Until that lease expires, the parent applies nothing of the object:
	// the second event is due, but held back by the first.
	n, err := p.inbox.WorkDue(t.Context())
	require.NoError(t, err)
	require.Zero(t, n, "an attempt while the dead worker's lease holds the object")
	require.Equal(t, idempotency.InboxPending, a.record(t, second.ID).State)
	require.Zero(t, a.handlerRuns(second.ID))
	holders, err := p.inbox.HeldBy(t.Context(), second.ID)
	require.NoError(t, err)
	require.Len(t, holders, 1)
	require.Equal(t, first.ID, holders[0].EventID)
	require.True(t, holders[0].Earlier)
	require.Equal(t, idempotency.InboxProcessing, holders[0].State)

	clock.Advance(pastHelperLease)
	p.run(t)
	a.awaitDrained(t, 2, 30*time.Second)
	p.stop()
	a.requireExactlyOnce(t, []faultEvent{first, second})
	rows, err := a.db.Pool.Query(t.Context(), `SELECT event_id FROM applied ORDER BY seq`)
	require.NoError(t, err)
	order, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{first.ID, second.ID}, order, "the dead worker's event first, then the later one of its object")
	require.Equal(t, 2, a.record(t, first.ID).Attempt, "the killed worker's attempt counts")
	require.Equal(t, 1, a.record(t, second.ID).Attempt)
}

// TestPgxInboxFaultKilledAtLastAttemptDeadLetters kills a worker process
// inside the last attempt of an event (the parent's MaxAttempts is 1): once
// the lease has expired, the parent's lease dead-letters the event instead
// of applying it, records why, and reports the attempt to OnResult, so that
// an event that kills every worker ends in dead letter. Redrive then applies
// it once, with a fresh budget.
func TestPgxInboxFaultKilledAtLastAttemptDeadLetters(t *testing.T) {
	t.Parallel()
	a := newFaultApp(t)
	clock := idempotencytest.NewClock(time.Now())
	p := a.process(t, "parent", idempotency.InboxConfig{MaxAttempts: 1, Lease: 12 * time.Second, Timeout: 10 * time.Second, PollInterval: 100 * time.Millisecond,
		Now: clock.Now})
	ev := faultEvent{ID: "evt_killed_last", Type: "invoice.paid", Invoice: "in_killed_last", Account: "acct_killed_last"}
	a.sendAll(t, []http.Handler{p.handler}, []faultEvent{ev}, 1)

	w := a.startHelperWorker(t, "TestHelperInboxWorker", helperWorkerEntered)
	w.await(t, "its handler")
	w.kill(t)

	clock.Advance(pastHelperLease)
	p.run(t)
	faultAwait(t, 30*time.Second, "the event dead-lettered", func() bool { return a.record(t, ev.ID).State == idempotency.InboxDeadLetter })
	r := a.record(t, ev.ID)
	require.Equal(t, 1, r.Attempt)
	require.Contains(t, r.LastError, "lease expired after attempt 1")
	require.Zero(t, a.handlerRuns(ev.ID), "the parent did not run the handler")
	var n int
	require.NoError(t, a.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM applied`).Scan(&n))
	require.Zero(t, n, "the killed worker's writes rolled back")
	// OnResult hears of it after the lease's commit, which the state above
	// is read from: awaited, not read at once.
	faultAwait(t, 10*time.Second, "the dead worker's attempt reported", func() bool { return len(a.attemptResults(ev.ID)) > 0 })
	results := a.attemptResults(ev.ID)
	require.Len(t, results, 1, "the dead worker's attempt, reported by the lease that dead-lettered it")
	require.Equal(t, idempotency.OutcomeFailed, results[0].Outcome)
	require.Equal(t, idempotency.InboxDeadLetter, results[0].State)
	require.Equal(t, 1, results[0].Attempt)
	require.ErrorIs(t, results[0].Err, idempotency.ErrLeaseExpired)

	n, err := p.inbox.Redrive(t.Context(), idempotency.RedriveFilter{EventIDs: []string{ev.ID}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	a.awaitDrained(t, 1, 30*time.Second)
	p.stop()
	a.requireExactlyOnce(t, []faultEvent{ev})
	require.Equal(t, 1, a.record(t, ev.ID).Attempt, "a fresh attempt budget")
	results = a.attemptResults(ev.ID) // Run, stopped, has reported every attempt it made
	require.Len(t, results, 2, "the dead worker's attempt once, then the redriven one")
	require.Equal(t, idempotency.OutcomeProcessed, results[1].Outcome)
	require.Equal(t, 1, results[1].Attempt)
}

// TestPgxInboxFaultKilledWorkerLeasedAhead kills a worker process of one
// worker while it applies the first of three events (of three objects)
// and holds the other two leased ahead, never started. Every lease of the
// dead process counts as an attempt, started or not: with MaxAttempts 1
// the parent's lease dead-letters the three, the two that never ran too,
// and runs no handler. Redrive then applies each once.
func TestPgxInboxFaultKilledWorkerLeasedAhead(t *testing.T) {
	t.Parallel()
	a := newFaultApp(t)
	clock := idempotencytest.NewClock(time.Now())
	p := a.process(t, "parent", idempotency.InboxConfig{MaxAttempts: 1, Lease: 12 * time.Second, Timeout: 10 * time.Second, PollInterval: 100 * time.Millisecond,
		Now: clock.Now})
	events := faultEvents("ahead", 3, 0)
	a.sendAll(t, []http.Handler{p.handler}, events, 1)

	w := startHelperProcess(t, "TestHelperInboxWorker", helperWorkerEntered, a.db.URL, a.db.Schema, envHelperWorkers+"=1")
	w.await(t, "its handler")
	a.awaitInbox(t, 30*time.Second, "the other two leased ahead", func(st idempotency.InboxStats) bool {
		return st.Counts[idempotency.InboxProcessing] == len(events)
	})
	w.kill(t)

	clock.Advance(pastHelperLease)
	p.run(t)
	a.awaitInbox(t, 30*time.Second, "the three dead-lettered", func(st idempotency.InboxStats) bool {
		return st.Counts[idempotency.InboxDeadLetter] == len(events)
	})
	ids := make([]string, len(events))
	for i, ev := range events {
		ids[i] = ev.ID
		r := a.record(t, ev.ID)
		require.Equal(t, 1, r.Attempt, ev.ID)
		require.Contains(t, r.LastError, "lease expired after attempt 1", ev.ID)
		require.Zero(t, a.handlerRuns(ev.ID), "the parent did not run the handler of %s", ev.ID)
	}
	n, err := p.inbox.Redrive(t.Context(), idempotency.RedriveFilter{EventIDs: ids})
	require.NoError(t, err)
	require.Equal(t, len(events), n)
	a.awaitDrained(t, len(events), 30*time.Second)
	p.stop()
	a.requireExactlyOnce(t, events)
}
