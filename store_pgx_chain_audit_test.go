package idempotency_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// The chain's mutation audit: each test pins a rule of txChain and of the
// worker's next that a mutant broke with every other test passing.

// requireLogClean checks that nothing was logged at WARN or ERROR.
func requireLogClean(t *testing.T, log *syncBuffer) {
	t.Helper()
	require.NotContains(t, log.String(), `"level":"ERROR"`)
	require.NotContains(t, log.String(), `"level":"WARN"`)
}

// A key claimed early with the event (an action declared KeyIsObjectID)
// in a transaction a chained commit began is the handler's as it is
// unchained: the action's Guard is answered from that claim, first, and
// the action runs.
func TestPgxInboxChainedTransactionEarlyGuardedAction(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	p := newPgInbox(t, b, idempotency.InboxConfig{Lease: time.Minute, Timeout: 10 * time.Second})
	p.hs = idempotency.NewHandlers()
	grant := idempotency.NewAction(p.hs, idempotency.ActionSpec{Name: "grant", Key: "invoice id", KeyIsObjectID: true},
		func(ctx context.Context, tx idempotency.Tx, key string, _ struct{}) error {
			return b.add(ctx, tx, "granted_"+key, 1)
		})
	idempotency.On(p.hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[pgInboxObject]) error {
		if err := b.add(ctx, tx, ev.Object.ID, 1); err != nil {
			return err
		}
		ran, err := grant.Do(ctx, tx, ev.Object.ID, struct{}{})
		if err == nil && !ran {
			err = fmt.Errorf("the action did not run for %s", ev.ID)
		}
		return err
	})
	p.inbox = p.newInbox(t, b.store)
	for i := 1; i <= 3; i++ {
		p.deliver(t, fmt.Sprintf("evt_chain_%d", i), fmt.Sprintf("in_chain_%d", i), int64(i))
	}
	require.Equal(t, 2, idempotency.ApplyChained(t.Context(), p.inbox, p.lease(t, 3)...))
	processed := idempotency.InboxProcessed
	requireChainResults(t, b, p, []int{1, 1, 1}, []idempotency.InboxState{processed, processed, processed})
	for i := 1; i <= 3; i++ {
		require.Equal(t, 1, b.get(t, fmt.Sprintf("granted_in_chain_%d", i)), "the action ran once for evt_chain_%d", i)
	}
}

// A commit that fails for a serialization failure is run again, with its
// handler, within the attempt: the next event, taken ahead by the failed
// COMMIT AND CHAIN, is still the worker's next, and the commit that
// succeeds takes no other event ahead in its place (which would leave the
// first unapplied, processing until its lease expired).
func TestPgxInboxChainedCommitRunAgain(t *testing.T) {
	t.Parallel()
	b, p, leased := chainInbox(t, 3)
	schema := quoteIdent(b.db.Schema)
	_, err := b.db.Pool.Exec(t.Context(), fmt.Sprintf(`
CREATE SEQUENCE %[1]s.conflict_once;
CREATE FUNCTION %[1]s.conflict_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.name = 'in_chain_1' AND nextval('%[2]s.conflict_once') = 1 THEN
        RAISE EXCEPTION 'conflict at commit' USING ERRCODE = 'serialization_failure';
    END IF;
    RETURN NEW;
END $$;
CREATE CONSTRAINT TRIGGER conflict_at_commit AFTER INSERT OR UPDATE ON %[1]s.counters
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION %[1]s.conflict_at_commit();`,
		schema, b.db.Schema))
	require.NoError(t, err)
	require.Equal(t, 1, idempotency.ApplyChained(t.Context(), p.inbox, leased...), "evt_chain_2's commit began evt_chain_3")
	processed := idempotency.InboxProcessed
	requireChainResults(t, b, p, []int{1, 1, 1}, []idempotency.InboxState{processed, processed, processed})
	var conflicts int64
	require.NoError(t, b.db.Pool.QueryRow(t.Context(), fmt.Sprintf(`SELECT last_value FROM %s.conflict_once`, schema)).Scan(&conflicts))
	require.GreaterOrEqual(t, conflicts, int64(2), "evt_chain_1's first commit failed, its second went through")
}

// A worker that Run stops while it applies W begins no transaction for
// the event it holds next: W's commit commits alone, and the events after
// it are given back.
func TestPgxInboxChainedNotBegunWhenStopped(t *testing.T) {
	t.Parallel()
	b, p, log, leased := begunInbox(t)
	stop, stopRun := context.WithCancel(t.Context())
	defer stopRun()
	p.write = func(_ context.Context, _ idempotency.Tx, eventID string) error {
		if eventID == "evt_begun_w" {
			stopRun()
		}
		return nil
	}
	require.Zero(t, idempotency.RunChainedWorker(t.Context(), stop, p.inbox, idempotency.NewWorkGate(1), leased, nil),
		"W's commit, after the stop, began nothing")
	require.Equal(t, []string{"evt_begun_w"}, resultIDs(t, p))
	requireBegunEvent(t, b, p, "w", 1, idempotency.InboxProcessed, 1)
	requireBegunEvent(t, b, p, "x", 0, idempotency.InboxPending, 0)
	requireBegunEvent(t, b, p, "y", 0, idempotency.InboxPending, 0)
	requireLogClean(t, log)
}

// A commit begins no transaction for a next event whose lease would not
// outlast an attempt started then: the worker gives that event back.
func TestPgxInboxChainedNotBegunWhenLeaseShort(t *testing.T) {
	t.Parallel()
	b, p, log, leased := begunInbox(t)
	p.write = func(_ context.Context, _ idempotency.Tx, eventID string) error {
		if eventID == "evt_begun_w" {
			p.clock.Advance(25 * time.Second) // 5s of X's lease left, less than an attempt's Timeout
		}
		return nil
	}
	require.Zero(t, idempotency.ApplyChained(t.Context(), p.inbox, leased...), "W's commit began nothing for X, given back")
	require.Equal(t, []string{"evt_begun_w", "evt_begun_y"}, resultIDs(t, p))
	requireBegunEvent(t, b, p, "x", 0, idempotency.InboxPending, 0)
	requireBegunEvent(t, b, p, "y", 1, idempotency.InboxProcessed, 1)
	requireLogClean(t, log)
}

// A commit begins no transaction for a next event that has no handler
// here (stored by a process that had one): its attempt fails at once with
// ErrNoHandler, to be retried (InboxConfig.RetryUnhandledFor), not held up
// by the lock a transaction begun for it would hold on its row.
func TestPgxInboxChainedNotBegunForUnhandledEvent(t *testing.T) {
	t.Parallel()
	b, p, log, _ := begunInbox(t)
	// Another process, with a handler for invoice.finalized, stored it.
	other := idempotency.NewHandlers()
	for _, typ := range []string{"invoice.paid", "invoice.finalized"} {
		idempotency.On(other, typ, func(context.Context, idempotency.Tx, idempotency.Event[pgInboxObject]) error { return nil })
	}
	ingest, err := idempotency.NewInbox(b.store, other, idempotency.InboxConfig{Now: p.clock.Now, Logger: discardLogger()})
	require.NoError(t, err)
	h, err := ingest.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	var ev map[string]any
	require.NoError(t, json.Unmarshal(pgInboxPayload(t, "evt_begun_z", "in_begun_z", 4), &ev))
	ev["type"] = "invoice.finalized"
	payload, err := json.Marshal(ev)
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, payload, testSecret)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	p.deliver(t, "evt_begun_v", "in_begun_v", 5)
	leased := p.lease(t, 2) // V, then Z (due together, in id order); W, X and Y were leased by begunInbox
	require.Equal(t, []string{"evt_begun_v", "evt_begun_z"}, []string{leased[0].EventID(), leased[1].EventID()})

	require.Zero(t, idempotency.ApplyChained(t.Context(), p.inbox, leased...), "V's commit began nothing for Z")
	p.mu.Lock()
	results := slices.Clone(p.results)
	p.mu.Unlock()
	require.Len(t, results, 2)
	require.Equal(t, "evt_begun_v", results[0].EventID)
	require.NoError(t, results[0].Err)
	require.Equal(t, "evt_begun_z", results[1].EventID)
	require.ErrorIs(t, results[1].Err, idempotency.ErrNoHandler)
	require.Equal(t, 1, b.get(t, "in_begun_v"))
	rec := p.record(t, "evt_begun_z")
	require.Equal(t, idempotency.InboxFailed, rec.State)
	require.Equal(t, 1, rec.Attempt)
	_, claimed, err := b.store.LookupEvent(t.Context(), "evt_begun_z")
	require.NoError(t, err)
	require.False(t, claimed, "an event without a handler is not claimed by the inbox")
	require.NotContains(t, log.String(), `"level":"WARN"`)
	require.Equal(t, 1, strings.Count(log.String(), `"level":"ERROR"`), "Z's failed attempt alone")
	require.Contains(t, log.String(), "no handler for the event's type")
}

// A begun transaction the worker rolled back, giving its event back, is
// forgotten: when the same worker takes that event again, leased afresh,
// it applies it in a transaction of its own, not in the one rolled back.
func TestPgxInboxChainedGivenBackThenTakenAgain(t *testing.T) {
	t.Parallel()
	b, p, log, leased := begunInbox(t)
	p.onResult = func(r idempotency.Result) {
		if r.EventID == "evt_begun_w" {
			p.clock.Advance(25 * time.Second) // after W's commit began X's transaction: 5s of X's lease left
		}
	}
	more := make(chan idempotency.InboxLeased)
	done := make(chan int, 1)
	go func() {
		done <- idempotency.RunChainedWorker(t.Context(), t.Context(), p.inbox, idempotency.NewWorkGate(1), leased[:2], more)
	}()
	require.Eventually(t, func() bool {
		rec, _, err := p.inbox.Lookup(t.Context(), "evt_begun_x")
		return err == nil && rec.State == idempotency.InboxPending
	}, 10*time.Second, time.Millisecond, "X given back")
	again := p.lease(t, 1)
	require.Equal(t, "evt_begun_x", again[0].EventID())
	for _, l := range []idempotency.InboxLeased{again[0], leased[2]} {
		select {
		case more <- l:
		case <-time.After(10 * time.Second):
			t.Fatalf("the worker did not take %s", l.EventID())
		}
	}
	close(more)
	require.GreaterOrEqual(t, recv(t, done, "the worker"), 1, "W's commit began X's transaction")
	require.Equal(t, []string{"evt_begun_w", "evt_begun_x", "evt_begun_y"}, resultIDs(t, p))
	requireBegunEvent(t, b, p, "x", 1, idempotency.InboxProcessed, 1)
	requireBegunEvent(t, b, p, "y", 1, idempotency.InboxProcessed, 1)
	requireLogClean(t, log)
}

// A worker whose gate is over its limit (lowered while it applied W, with
// another worker inside) takes nothing ahead: W's commit begins no
// transaction, and the worker leaves the gate after W, as a lowered limit
// asks; once the gate lets it in again, its commits chain again.
func TestPgxInboxChainedNotBegunOverLimit(t *testing.T) {
	t.Parallel()
	b, p, log, leased := begunInbox(t)
	gate := idempotency.NewWorkGate(2)
	gate.Enter() // the other worker
	p.write = func(_ context.Context, _ idempotency.Tx, eventID string) error {
		if eventID == "evt_begun_w" {
			gate.SetLimit(1) // two inside, one let in
		}
		return nil
	}
	p.onResult = func(r idempotency.Result) {
		if r.EventID == "evt_begun_w" {
			gate.Leave() // the other worker's attempt ended too
		}
	}
	require.Equal(t, 1, idempotency.RunChainedWorker(t.Context(), t.Context(), p.inbox, gate, leased, nil),
		"only X's commit, within the limit, began the next")
	require.Equal(t, []string{"evt_begun_w", "evt_begun_x", "evt_begun_y"}, resultIDs(t, p))
	for _, name := range []string{"w", "x", "y"} {
		requireBegunEvent(t, b, p, name, 1, idempotency.InboxProcessed, 1)
	}
	requireLogClean(t, log)
}

// Run leases no more than its queue holds: the events a worker takes
// ahead, chaining its commits, count as queued until the worker takes
// them up. Counted out and not in, each would free a place in the queue
// that is not free: Run would lease an event more than the queue holds
// and wait, holding it, to queue it, while the worker waits too.
func TestPgxInboxRunQueueBoundWhileChaining(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	p := newPgInbox(t, b, idempotency.InboxConfig{Workers: 1, IngestWorkers: 1, Lease: time.Minute, Timeout: 10 * time.Second})
	const events, held = 12, "evt_bound_08"
	for i := range events {
		p.deliver(t, fmt.Sprintf("evt_bound_%02d", i), fmt.Sprintf("in_bound_%02d", i), int64(i))
	}
	entered, release := make(chan struct{}), make(chan struct{})
	p.block = func(eventID string) {
		if eventID == held {
			close(entered)
			<-release
		}
	}
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	ctx, stop := context.WithCancel(t.Context())
	var runErr error
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		runErr = p.inbox.Run(ctx)
	}()
	defer func() { // also when the test fails: Run may be waiting for the held handler
		unblock()
		stop()
		select {
		case <-finished:
		case <-time.After(30 * time.Second):
			t.Error("Run did not return")
		}
	}()
	// After eight events applied one after another, which a loaded
	// machine can take longer for than recv's 30 s.
	recvWithin(t, entered, time.Minute, "the handler of "+held)
	// The worker holds evt_bound_08 and the queue two more: Run waits.
	require.Eventually(t, func() bool { return idempotency.InboxIdle(p.inbox) }, 10*time.Second, time.Millisecond,
		"Run waits with its queue full")
	st, err := p.inbox.Stats(t.Context())
	require.NoError(t, err)
	require.Equal(t, 3, st.Counts[idempotency.InboxProcessing], "leased: the one applied and a queue of two")
	unblock()
	require.Eventually(t, func() bool {
		st, err := p.inbox.Stats(t.Context())
		return err == nil && st.Counts[idempotency.InboxProcessed] == events
	}, 30*time.Second, time.Millisecond)
	stop()
	recv(t, finished, "Run")
	require.NoError(t, runErr)
	for i := range events {
		require.Equal(t, 1, b.get(t, fmt.Sprintf("in_bound_%02d", i)))
	}
}
