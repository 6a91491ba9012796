package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// operatorChaos is what the operator of TestPgxOperatorChaos did and saw.
type operatorChaos struct {
	mu        sync.Mutex
	calls     map[string]int     // operation → calls
	failed    map[string][]error // operation → its errors, each a documented one or not
	forgotten map[string]bool    // events Forget reported found
	broken    []string           // what an operation did that it may not
}

func (o *operatorChaos) note(op string, err error, documented ...error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls[op]++
	if err == nil {
		return
	}
	o.failed[op] = append(o.failed[op], err)
	for _, d := range documented {
		if errors.Is(err, d) {
			return
		}
	}
	o.broken = append(o.broken, fmt.Sprintf("%s failed with an undocumented error: %v (%T)", op, err, err))
}

func (o *operatorChaos) breaks(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.broken = append(o.broken, fmt.Sprintf(format, args...))
}

// operatorIndex is k of event evt_<prefix>_0_k, or of its invoice's task.
func operatorIndex(id string) int {
	k, err := strconv.Atoi(id[strings.LastIndexByte(id, '_')+1:])
	if err != nil {
		panic(id)
	}
	return k
}

// TestPgxOperatorChaos: two replicas (two PgxStores on one schema, each
// with a pool of its own) run the workers of their inboxes while events
// come in; handlers fail some attempts, once or, for some events and
// tasks, until the cause is fixed (dead letters). Meanwhile an operator, a
// third replica, redrives by ids, by type, by kind and by time range, dry
// runs redrives (each of which moves nothing), forgets events (processed,
// dead-lettered, and still to be applied, which is refused), prunes with
// short windows (Payloads 200ms, DeadLetters 300ms) and lists and counts
// the inbox, and pg_terminate_backend ends the sessions of one of the
// three at random points.
//
// Afterwards, with the faults stopped: Stats counts what List lists; a dry
// run of every redrive counts what Stats counts and moves nothing; once the
// cause is fixed and the dead letters redriven, the inbox drains. Every
// event delivered is processed, forgotten by the operator once it was
// applied or dead-lettered, or pruned after it finished (applied, or
// dead-lettered); each
// applied event was applied once and credited its invoice once; each
// applied event's task is processed, with one effect at the provider under
// one idempotency key, and ran with its arguments. Every failed operation
// failed with a documented error, and none but a redrive that moves rows
// for a session that ended.
func TestPgxOperatorChaos(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	seed := rand.Uint64()
	t.Logf("operator chaos seed %d", seed)

	a := newTaskApp(t)
	var poisoned atomic.Bool // the events' and the tasks' poison is not fixed yet
	poisoned.Store(true)
	var argsMu sync.Mutex
	var badArgs []string
	a.withReceipts(a.db.Pool, func(_ context.Context, _ string, run idempotency.TaskRun[taskReceipt]) error {
		k := operatorIndex(run.Key)
		if want := fmt.Sprintf("acct_op_%d", k%16); run.Args.Account != want || run.Args.Amount != 100 {
			argsMu.Lock()
			badArgs = append(badArgs, fmt.Sprintf("%s attempt %d ran with %+v", run.Key, run.Attempt, run.Args))
			argsMu.Unlock()
		}
		switch {
		case k%10 == 7 && poisoned.Load():
			return errors.New("receipt provider: account closed")
		case k%3 == 0 && run.Attempt == 1:
			return errors.New("receipt provider: 503")
		}
		return nil
	})
	var failedOnce sync.Map // event id → its first attempt failed
	a.setHook(func(_ context.Context, _ idempotency.Tx, _, eventID string) error {
		k := operatorIndex(eventID)
		if k%9 == 4 && poisoned.Load() {
			return errors.New("ledger: account locked")
		}
		if _, again := failedOnce.LoadOrStore(eventID, true); k%4 == 1 && !again {
			return errors.New("ledger: 503")
		}
		return nil
	})
	cfg := idempotency.InboxConfig{
		MaxAttempts: 2, Lease: 3 * time.Second, Timeout: 2 * time.Second, PollInterval: 100 * time.Millisecond, Backoff: faultBackoff,
	}
	w1, w2 := a.process(t, "one", cfg), a.process(t, "two", cfg)
	op := a.process(t, "operator", idempotency.InboxConfig{})
	opStore, err := idempotency.NewPgxStore(op.pool, idempotency.PgxConfig{Schema: a.db.Schema})
	require.NoError(t, err)
	prunes := &chaosPrunes{}
	r := idempotency.Retention{Payloads: chaosPayloads, DeadLetters: 300 * time.Millisecond, BatchSize: 20, Pause: -1, Now: prunes.now}

	w1.run(t)
	w2.run(t)
	events := faultEvents("op", 80, 0)
	tr := a.startAll(t, []http.Handler{w1.handler, w2.handler}, events, 4)

	o := &operatorChaos{calls: map[string]int{}, failed: map[string][]error{}, forgotten: map[string]bool{}}
	stop := make(chan struct{})
	var faults sync.WaitGroup
	faults.Go(func() { operate(op.inbox, opStore, r, prunes, o, rand.New(rand.NewPCG(seed, seed+1)), stop) })
	rng := rand.New(rand.NewPCG(seed, seed))
	terminated := map[string]int{}
	faults.Go(func() {
		for range 30 {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(rng.IntN(50)) * time.Millisecond): // a random point in the traffic and the operations
			}
			victim := []*faultProc{w1, w2, op}[rng.IntN(3)]
			if n, err := a.tryTerminateSessions(ctx, victim); err == nil {
				terminated[victim.name] += n
			}
		}
	})
	stopFaults := sync.OnceFunc(func() {
		close(stop)
		faults.Wait()
	})
	t.Cleanup(stopFaults)
	start := time.Now()
	tr.wg.Wait()
	require.Len(t, tr.sent, len(events))
	t.Logf("delivered in %v", time.Since(start))
	time.Sleep(300 * time.Millisecond) // the operator and the faults go on a while after the traffic
	stopFaults()
	a.awaitInbox(t, 30*time.Second, "nothing left to apply but dead letters", func(st idempotency.InboxStats) bool {
		return st.Counts[idempotency.InboxPending]+st.Counts[idempotency.InboxProcessing]+st.Counts[idempotency.InboxFailed] == 0
	})
	t.Logf("attempted in %v", time.Since(start))
	w1.stop()
	w2.stop()
	t.Logf("operations %v; sessions terminated %v; answers by status %v", o.calls, terminated, tr.statuses)
	for op, errs := range o.failed {
		t.Logf("%s: %d failed (first: %v)", op, len(errs), errs[0])
	}
	require.Empty(t, o.broken)

	// At rest: Stats counts what List lists, and a dry run what Stats
	// counts, moving nothing.
	st := requireStatsAsListed(t, a.observer)
	all := idempotency.RedriveFilter{States: []idempotency.InboxState{idempotency.InboxDeadLetter, idempotency.InboxFailed}}
	dry := all
	dry.DryRun = true
	evs, tasks, err := a.observer.RedriveByKind(ctx, dry)
	require.NoError(t, err)
	require.Equal(t, st.Events(idempotency.InboxDeadLetter)+st.Events(idempotency.InboxFailed), evs, "events a dry run counts")
	require.Equal(t, st.TaskCounts[idempotency.InboxDeadLetter]+st.TaskCounts[idempotency.InboxFailed], tasks, "tasks a dry run counts")
	require.Equal(t, st, requireStatsAsListed(t, a.observer), "a dry run changed the inbox")

	// The cause fixed, the dead letters redriven: the inbox drains.
	poisoned.Store(false)
	drain := a.process(t, "drain", cfg)
	drain.run(t)
	_, err = drain.inbox.Redrive(ctx, all)
	require.NoError(t, err)
	a.awaitInbox(t, 30*time.Second, "every event and task finished", func(st idempotency.InboxStats) bool {
		return st.Counts[idempotency.InboxPending]+st.Counts[idempotency.InboxProcessing]+st.Counts[idempotency.InboxFailed]+
			st.Counts[idempotency.InboxDeadLetter] == 0
	})
	drain.stop()
	t.Logf("drained in %v", time.Since(start))
	requireStatsAsListed(t, a.observer)
	requireOperatorOutcome(t, a, events, o.forgotten)
	argsMu.Lock()
	require.Empty(t, badArgs, "tasks that ran without their arguments")
	argsMu.Unlock()
}

// operate is the operator of TestPgxOperatorChaos, until stop: one
// operation after another, chosen by rng.
func operate(in *idempotency.Inbox, store *idempotency.PgxStore, r idempotency.Retention, prunes *chaosPrunes,
	o *operatorChaos, rng *rand.Rand, stop <-chan struct{}) {
	ctx := context.Background()
	// A redrive that moves rows fails when its session ends (it may have
	// committed: it is not sent again); a read, a prune or a forget goes
	// to another connection.
	unavailable := idempotency.ErrStoreUnavailable
	kinds := []idempotency.InboxKind{"", idempotency.KindEvent, idempotency.KindTask}
	deadLetters := func() []idempotency.InboxRecord {
		recs, err := in.List(ctx, idempotency.InboxFilter{Kind: kinds[rng.IntN(len(kinds))], States: []idempotency.InboxState{idempotency.InboxDeadLetter}, Limit: 20})
		o.note("List", err)
		return recs
	}
	// ids are some of recs' ids, one at least: no ids selects them all.
	ids := func(recs []idempotency.InboxRecord) []string {
		out := []string{recs[0].EventID}
		for _, rec := range recs[1:] {
			if rng.IntN(2) == 0 {
				out = append(out, rec.EventID)
			}
		}
		return out
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		// Prunes and redrives of many rows are drawn less often than the
		// others: a prune takes a transaction per step, and a wide redrive
		// leaves few dead letters for the redrives by ids and the dry runs.
		switch []int{0, 0, 0, 0, 1, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 6, 6, 6, 7, 7, 7, 7, 7}[rng.IntN(24)] {
		case 0: // by ids, dead letters and failed ones
			if recs := deadLetters(); len(recs) > 0 {
				_, err := in.Redrive(ctx, idempotency.RedriveFilter{EventIDs: ids(recs),
					States: []idempotency.InboxState{idempotency.InboxDeadLetter, idempotency.InboxFailed}})
				o.note("Redrive", err, unavailable)
			}
		case 1: // by type, or by kind
			f := idempotency.RedriveFilter{EventType: "invoice.paid"}
			if rng.IntN(2) == 0 {
				f = idempotency.RedriveFilter{Kind: idempotency.KindTask}
			}
			_, _, err := in.RedriveByKind(ctx, f)
			o.note("RedriveByKind", err, unavailable)
		case 2: // by time range: received in a second that ended up to a second ago
			until := time.Now().Add(-time.Duration(rng.IntN(1000)) * time.Millisecond)
			_, _, err := in.RedriveByKind(ctx, idempotency.RedriveFilter{Since: until.Add(-time.Second), Until: until})
			o.note("RedriveByKind", err, unavailable)
		case 3: // a dry run moves nothing: nothing else moves a dead letter but a prune, which deletes it
			recs := deadLetters()
			if len(recs) == 0 {
				continue
			}
			n, err := in.Redrive(ctx, idempotency.RedriveFilter{EventIDs: ids(recs), DryRun: true})
			o.note("Redrive dry run", err)
			if n > len(recs) {
				o.breaks("a dry run over %d dead letters counted %d", len(recs), n)
			}
			for _, rec := range recs {
				after, ok, err := in.Lookup(ctx, rec.EventID)
				o.note("Lookup", err)
				if err == nil && ok && (after.State != rec.State || after.Attempt != rec.Attempt) {
					o.breaks("%s was %s at attempt %d, after a dry run %s at attempt %d", rec.EventID, rec.State, rec.Attempt, after.State, after.Attempt)
				}
			}
		case 4: // forget an event: a processed one, a dead letter, or one still to be applied, which is refused
			states := [][]idempotency.InboxState{
				{idempotency.InboxProcessed}, {idempotency.InboxDeadLetter},
				{idempotency.InboxPending, idempotency.InboxFailed, idempotency.InboxProcessing},
			}[rng.IntN(3)]
			recs, err := in.List(ctx, idempotency.InboxFilter{Kind: idempotency.KindEvent, States: states, Limit: 10})
			o.note("List", err)
			if len(recs) == 0 {
				continue
			}
			id := recs[rng.IntN(len(recs))].EventID
			found, err := store.Forget(ctx, id)
			o.note("Forget", err, idempotency.ErrUnfinished)
			if err == nil && found {
				o.mu.Lock()
				o.forgotten[id] = true
				o.mu.Unlock()
			}
		case 5:
			rep, err := store.Prune(ctx, r)
			prunes.add(rep, err)
			o.note("Prune", err)
		case 6:
			_, err := in.Stats(ctx)
			o.note("Stats", err)
		case 7:
			f := idempotency.InboxFilter{Limit: 1 + rng.IntN(50)}
			if rng.IntN(2) == 0 {
				f.Kind = idempotency.KindTask
			}
			_, err := in.List(ctx, f)
			o.note("List", err)
		}
	}
}

// requireStatsAsListed requires in's Stats to count by kind and state
// what List lists over every state, page after page, and returns them.
func requireStatsAsListed(t *testing.T, in *idempotency.Inbox) idempotency.InboxStats {
	t.Helper()
	st, err := in.Stats(t.Context())
	require.NoError(t, err)
	listed := map[idempotency.InboxState]int{}
	listedTasks := map[idempotency.InboxState]int{}
	var after idempotency.InboxPosition
	for {
		recs, err := in.List(t.Context(), idempotency.InboxFilter{After: after, Limit: idempotency.MaxListLimit})
		require.NoError(t, err)
		for _, rec := range recs {
			listed[rec.State]++
			if rec.Kind == idempotency.KindTask {
				listedTasks[rec.State]++
			}
		}
		if len(recs) < idempotency.MaxListLimit {
			break
		}
		after = recs[len(recs)-1].Position()
	}
	for state, n := range st.Counts {
		require.Equal(t, n, listed[state], "Stats and List: %s", state)
		require.Equal(t, st.TaskCounts[state], listedTasks[state], "Stats and List: tasks %s", state)
	}
	return st
}

// requireOperatorOutcome checks the database after TestPgxOperatorChaos:
// see there.
func requireOperatorOutcome(t *testing.T, a *faultApp, events []faultEvent, forgotten map[string]bool) {
	t.Helper()
	ctx := t.Context()
	counts := func(q string) map[string]int {
		t.Helper()
		rows, err := a.db.Pool.Query(ctx, q)
		require.NoError(t, err, q)
		out := map[string]int{}
		var id string
		var n int
		_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error {
			out[id] = n
			return nil
		})
		require.NoError(t, err, q)
		return out
	}
	applied := counts(`SELECT event_id, count(*)::int FROM applied GROUP BY event_id`)
	ledger := counts(`SELECT event_id, 1 FROM idempotency_events WHERE outcome = 'processed'`)
	states := map[string]string{}
	rows, err := a.db.Pool.Query(ctx, `SELECT event_id, state FROM idempotency_inbox`)
	require.NoError(t, err)
	var id, state string
	_, err = pgx.ForEachRow(rows, []any{&id, &state}, func() error {
		states[id] = state
		return nil
	})
	require.NoError(t, err)

	wantTasks := map[string]string{}
	wantCredits := map[string]int{}
	var processed, pruned, prunedDead, forgottenDead int
	for _, ev := range events {
		n := applied[ev.ID]
		require.LessOrEqual(t, n, 1, "%s applied more than once", ev.ID)
		st, stored := states[ev.ID]
		switch {
		case forgotten[ev.ID]:
			require.False(t, stored, "%s forgotten, yet in the inbox", ev.ID)
			require.Zero(t, ledger[ev.ID], "%s forgotten, yet in the ledger", ev.ID)
			if n == 0 {
				require.True(t, deadLettered(a.attemptResults(ev.ID)), "%s forgotten before it was applied or dead-lettered", ev.ID)
				forgottenDead++
			}
		case stored:
			require.Equal(t, string(idempotency.InboxProcessed), st, "%s", ev.ID)
			require.Equal(t, 1, n, "%s processed but not applied", ev.ID)
			require.Equal(t, 1, ledger[ev.ID], "%s processed but not in the ledger", ev.ID)
			processed++
		case n == 1: // pruned once processed
			require.Equal(t, 1, ledger[ev.ID], "%s applied and pruned but not in the ledger", ev.ID)
			pruned++
		default: // pruned dead-lettered, or lost
			require.True(t, deadLettered(a.attemptResults(ev.ID)), "%s was never applied nor dead-lettered and is not in the inbox: lost", ev.ID)
			prunedDead++
		}
		if n == 1 {
			wantTasks[receiptTaskID(ev.Invoice)] = string(idempotency.InboxProcessed)
			wantCredits[ev.Account] += 100
		}
	}
	t.Logf("events: %d processed, %d forgotten (%d dead-lettered), %d pruned once processed, %d pruned dead-lettered",
		processed, len(forgotten), forgottenDead, pruned, prunedDead)
	require.Equal(t, len(events), len(applied)+prunedDead+forgottenDead, "no event applied but those sent")

	gotTasks := map[string]string{}
	for id, st := range states {
		if strings.HasPrefix(id, receiptTaskPrefix) {
			gotTasks[id] = st
		}
	}
	require.Equal(t, wantTasks, gotTasks, "one task per applied event, processed")
	credits := counts(`SELECT id, credits::int FROM accounts`)
	require.Equal(t, wantCredits, credits, "credits per account: 100 per applied event")

	// One effect at the provider per task, with its arguments, under the
	// one idempotency key of every call for it.
	effects := counts(`SELECT task_key, count(*)::int FROM provider_calls WHERE amount = 100 GROUP BY task_key`)
	keys := counts(`SELECT task_key, count(DISTINCT idempotency_key)::int FROM provider_requests GROUP BY task_key`)
	want := map[string]int{}
	for id := range wantTasks {
		want[strings.TrimPrefix(id, receiptTaskPrefix)] = 1
	}
	require.Equal(t, want, effects, "one effect at the provider per task, with the task's amount")
	require.Equal(t, want, keys, "one idempotency key per task")
}

// deadLettered reports whether an attempt of res dead-lettered its event.
func deadLettered(res []idempotency.Result) bool {
	for _, r := range res {
		if r.State == idempotency.InboxDeadLetter {
			return true
		}
	}
	return false
}
