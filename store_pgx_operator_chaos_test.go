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
// run of every redrive counts what Stats counts and moves nothing. Then
// dead letters are pruned as redrives of the same ids race the prunes
// (pruneRacingRedrives, which says what it checks). Once the cause is
// fixed and the dead letters left redriven, the inbox drains. Every
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
		MaxAttempts: 2, Lease: faultLease, Timeout: faultTimeout, PollInterval: 100 * time.Millisecond, Backoff: faultBackoff,
	}
	w1, w2 := a.process(t, "one", cfg), a.process(t, "two", cfg)
	op := a.process(t, "operator", idempotency.InboxConfig{})
	opStore, err := idempotency.NewPgxStore(op.pool, idempotency.PgxConfig{Schema: a.db.Schema})
	require.NoError(t, err)
	prunes := &chaosPrunes{}
	r := idempotency.Retention{Payloads: chaosPayloads, DeadLetters: deadLetterWindow, BatchSize: 20, Pause: -1, Now: prunes.now}

	w1.run(t)
	w2.run(t)
	events := faultEvents("op", 80, 0)
	tr := a.startAll(t, []http.Handler{w1.handler, w2.handler}, events, 4)

	o := &operatorChaos{calls: map[string]int{}, failed: map[string][]error{}, forgotten: map[string]bool{}}
	stop := make(chan struct{})
	var faults sync.WaitGroup
	faults.Go(func() { operate(op.inbox, opStore, r, prunes, o, rand.New(rand.NewPCG(seed, seed+1)), stop) })
	rng := rand.New(rand.NewPCG(seed, seed))
	var terminated map[string]int
	faults.Go(func() { terminated = a.terminateAtRandom(ctx, rng, 30, stop, w1, w2, op) })
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
	a.awaitInbox(t, 2*time.Minute, "nothing left to apply but dead letters", nothingToApply)
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

	// The dead letters pruned as their redrives race the prune; then,
	// the cause fixed, the dead letters left redriven: the inbox drains.
	poisoned.Store(false)
	drain := a.process(t, "drain", cfg)
	drain.run(t)
	pruneRacingRedrives(t, a, events, op, opStore, rand.New(rand.NewPCG(seed, seed+2)), o)
	_, err = drain.inbox.Redrive(ctx, all)
	require.NoError(t, err)
	a.awaitInbox(t, 2*time.Minute, "every event and task finished", func(st idempotency.InboxStats) bool {
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

// nothingToApply reports whether st counts nothing pending, processing
// or failed.
func nothingToApply(st idempotency.InboxStats) bool {
	return st.Counts[idempotency.InboxPending]+st.Counts[idempotency.InboxProcessing]+st.Counts[idempotency.InboxFailed] == 0
}

// deadLetterWindow is the Retention.DeadLetters of TestPgxOperatorChaos.
const deadLetterWindow = 300 * time.Millisecond

// pruneRacingRedrives is the second phase of TestPgxOperatorChaos, at
// rest but for dead letters, their cause fixed. Prunes, a batch a row,
// one after another, delete the dead-lettered events as they age past
// Retention.DeadLetters, while an operator redrives a seed-chosen half of
// them, one id after another in a seed-chosen order and at seed-chosen
// points (up to 20ms apart), redriving again after a failure, and
// pg_terminate_backend ends the sessions of the prunes and the redrives
// at up to 10 random points (not the workers': an event redriven then
// fails for no other cause, and is applied at its first attempt). The
// prunes go on until every dead letter not redriven is gone.
//
// Then: each dead letter not redriven is pruned. One whose redrive moved
// it was not pruned as it waited or ran, and was applied once: its claim,
// its guard and its task are there, and it is processed (or pruned once
// processed). One whose redrives moved nothing was pruned first. A pruned
// dead letter is gone with what Retention says goes with it, its inbox
// row, and has no claim, guard or task, none of which it committed (a
// claim is kept while its event is dead-lettered, and then goes by
// EventIDs, 45 days). One whose redrives failed (ErrStoreUnavailable: one
// may have committed) is one of the two, or still a dead letter. The
// dead-lettered tasks are all kept: a task is its key's record, kept
// EventIDs plus DeadLetters. The prunes report no more dead letters than
// went (fewer when a batch's COMMIT's answer and its look-up were both
// lost); Stats counts what List lists; every operation failed with a
// documented error, and no prune failed.
func pruneRacingRedrives(t *testing.T, a *faultApp, events []faultEvent, op *faultProc, store *idempotency.PgxStore,
	rng *rand.Rand, o *operatorChaos) {
	t.Helper()
	ctx := t.Context()
	start := time.Now()
	// The finished events pruned first, the dead letters kept: the prunes
	// below, a row a batch, are at the dead letters at once.
	_, err := store.Prune(ctx, idempotency.Retention{Payloads: chaosPayloads, DeadLetters: time.Hour, Pause: -1})
	require.NoError(t, err)
	dead := []idempotency.InboxState{idempotency.InboxDeadLetter}
	deadEvents, err := a.observer.List(ctx, idempotency.InboxFilter{Kind: idempotency.KindEvent, States: dead, Limit: idempotency.MaxListLimit})
	require.NoError(t, err)
	deadTasks, err := a.observer.List(ctx, idempotency.InboxFilter{Kind: idempotency.KindTask, States: dead, Limit: idempotency.MaxListLimit})
	require.NoError(t, err)
	rng.Shuffle(len(deadEvents), func(i, j int) { deadEvents[i], deadEvents[j] = deadEvents[j], deadEvents[i] })
	redriven := deadEvents[:len(deadEvents)/2]
	var left []string // the dead letters not redriven
	for _, rec := range deadEvents[len(redriven):] {
		left = append(left, rec.EventID)
	}

	// What the redrives of a dead letter answered: the rows they moved,
	// and whether one failed (its session ended: it may have committed).
	type redrive struct {
		moved  int
		failed bool
	}
	redrives := map[string]*redrive{}
	for _, rec := range redriven {
		redrives[rec.EventID] = &redrive{}
	}
	pauses := make([]time.Duration, len(redriven))
	for i := range pauses {
		pauses[i] = time.Duration(rng.IntN(20)) * time.Millisecond
	}
	redrivesDone := make(chan struct{})
	var faults sync.WaitGroup
	faults.Go(func() {
		defer close(redrivesDone)
		for i, rec := range redriven {
			<-time.After(pauses[i]) // a random point in the prunes
			rd := redrives[rec.EventID]
			for range 30 {
				n, err := op.inbox.Redrive(ctx, idempotency.RedriveFilter{EventIDs: []string{rec.EventID}})
				o.note("Redrive", err, idempotency.ErrStoreUnavailable)
				rd.moved += n
				if err == nil {
					break
				}
				rd.failed = true
			}
		}
	})
	r := idempotency.Retention{Payloads: chaosPayloads, DeadLetters: deadLetterWindow, BatchSize: 1, Pause: -1}
	var reported int // dead letters the prunes reported
	pruned := make(chan struct{})
	faults.Go(func() {
		defer close(pruned)
		for ctx.Err() == nil {
			rep, err := store.Prune(ctx, r)
			reported += rep.DeadLetters
			o.note("Prune", err)
			select {
			case <-redrivesDone:
				if len(left) == 0 {
					return
				}
				recs, err := a.observer.List(ctx, idempotency.InboxFilter{EventIDs: left, Limit: 1})
				if err == nil && len(recs) == 0 {
					return
				}
			default:
			}
		}
	})
	// At most 10 times: a prune batch is tried on 16 connections before
	// it fails, every one of them ended here, with ErrStoreUnavailable.
	faults.Go(func() { a.terminateAtRandom(ctx, rng, 10, pruned, op) })
	select {
	case <-pruned:
	case <-time.After(30 * time.Second):
		require.FailNow(t, "dead letters not pruned after 30s")
	}
	faults.Wait()
	a.awaitInbox(t, time.Minute, "the events redriven applied", nothingToApply)
	require.Empty(t, o.broken)

	invoices := map[string]string{}
	for _, ev := range events {
		invoices[ev.ID] = ev.Invoice
	}
	applied := a.countByID(t, `SELECT event_id, count(*)::int FROM applied GROUP BY event_id`)
	ledger := a.countByID(t, `SELECT event_id, count(*)::int FROM idempotency_events GROUP BY event_id`)
	guards := a.countByID(t, `SELECT event_id, count(*)::int FROM idempotency_guards GROUP BY event_id`)
	states := a.inboxStates(t)
	var moved, gone, unknown int
	for _, rec := range deadEvents {
		id := rec.EventID
		rd := redrives[id]
		if rd == nil {
			rd = &redrive{}
		}
		st, stored := states[id]
		require.LessOrEqual(t, rd.moved, 1, "%s: its redrives moved it more than once", id)
		switch {
		case rd.moved == 1 || applied[id] > 0:
			require.True(t, rd.moved == 1 || rd.failed, "%s applied, yet its redrives moved nothing", id)
			require.Equal(t, 1, applied[id], "%s redriven: applied once", id)
			require.Equal(t, 1, ledger[id], "%s applied: its claim", id)
			require.Equal(t, 1, guards[id], "%s applied: its guard", id)
			require.Contains(t, states, receiptTaskID(invoices[id]), "%s applied: its task", id)
			require.True(t, !stored || st == string(idempotency.InboxProcessed), "%s applied, yet %s", id, st)
			moved++
		case rd.failed && st == string(idempotency.InboxDeadLetter):
			unknown++ // its redrives failed before they committed, and the prunes stopped before they took it
		default:
			require.False(t, stored, "%s: its redrives moved nothing, yet it is %s", id, st)
			require.Zero(t, ledger[id], "%s pruned a dead letter, yet claimed", id)
			require.Zero(t, guards[id], "%s pruned a dead letter, yet it holds guards", id)
			require.NotContains(t, states, receiptTaskID(invoices[id]), "%s pruned a dead letter, yet it enqueued its task", id)
			gone++
		}
	}
	for _, rec := range deadTasks {
		require.Equal(t, string(idempotency.InboxDeadLetter), states[rec.EventID], "dead-lettered task %s: kept", rec.EventID)
	}
	t.Logf("dead letters: %d redriven and applied, %d pruned (%d reported; %d not redriven), %d left (redrives that failed); %d dead-lettered tasks kept; in %v",
		moved, gone, reported, len(left), unknown, len(deadTasks), time.Since(start))
	require.LessOrEqual(t, reported, gone, "dead letters the prunes reported")
	requireStatsAsListed(t, a.observer)
}

// terminateAtRandom ends the sessions of one of victims, drawn by rng, at
// up to rounds points drawn by rng up to 50ms apart, until stop is
// closed, and returns how many sessions of each it ended.
func (a *faultApp) terminateAtRandom(ctx context.Context, rng *rand.Rand, rounds int, stop <-chan struct{}, victims ...*faultProc) map[string]int {
	terminated := map[string]int{}
	for range rounds {
		select {
		case <-stop:
			return terminated
		case <-time.After(time.Duration(rng.IntN(50)) * time.Millisecond): // a random point in what runs meanwhile
		}
		victim := victims[rng.IntN(len(victims))]
		if n, err := a.tryTerminateSessions(ctx, victim); err == nil {
			terminated[victim.name] += n
		}
	}
	return terminated
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
	counts := func(q string) map[string]int { return a.countByID(t, q) }
	applied := counts(`SELECT event_id, count(*)::int FROM applied GROUP BY event_id`)
	ledger := counts(`SELECT event_id, 1 FROM idempotency_events WHERE outcome = 'processed'`)
	states := a.inboxStates(t)

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

// countByID runs q, which selects an id and a count, and returns the
// counts by id.
func (a *faultApp) countByID(t *testing.T, q string) map[string]int {
	t.Helper()
	rows, err := a.db.Pool.Query(t.Context(), q)
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

// inboxStates are the states of the inbox's rows by id.
func (a *faultApp) inboxStates(t *testing.T) map[string]string {
	t.Helper()
	rows, err := a.db.Pool.Query(t.Context(), `SELECT event_id, state FROM idempotency_inbox`)
	require.NoError(t, err)
	states := map[string]string{}
	var id, state string
	_, err = pgx.ForEachRow(rows, []any{&id, &state}, func() error {
		states[id] = state
		return nil
	})
	require.NoError(t, err)
	return states
}
