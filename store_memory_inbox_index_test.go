package idempotency_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// memoryInboxWalk is one seeded sequence of every operation that stores an
// inbox row or changes its state on a MemoryStore (deliveries, WorkDue on
// a fake clock with handlers and tasks that fail, snooze, panic and skip,
// leases taken and applied late, given back or left to expire, Redrive,
// Forget, Prune).
type memoryInboxWalk struct {
	mem   *idempotency.MemoryStore
	side  *paritySide
	clock *idempotencytest.Clock
	rng   *rand.Rand
	specs []paritySpec
}

// walkMemoryInbox runs 300 steps of seed's sequence and calls check after
// each.
func walkMemoryInbox(t *testing.T, seed uint64, check func(step int, w *memoryInboxWalk)) {
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(seed, seed*7919))
	clock := idempotencytest.NewClock(time.Now().Add(time.Hour).Truncate(time.Second))
	mem := idempotency.NewMemoryStore()
	c := &counters{m: map[string]int{}}
	icfg := idempotency.InboxConfig{Workers: 1 + rng.IntN(3), MaxAttempts: []int{1, 2, 3}[rng.IntN(3)],
		Backoff: func(n int) time.Duration { return time.Duration(n) * time.Minute }}
	side := newParitySide(t, "memory", mem, clock, true, icfg, c.add, nil)
	types := []string{"invoice.paid", "invoice.payment_succeeded", "checkout.session.completed", "charge.refunded"}
	modes := []string{"ok", "ok", "skip", "fail1", "fail2", "fail", "snooze", "perm", "snooze0", "panic", "tskip"}
	var specs []paritySpec
	for i := range 30 {
		specs = append(specs, paritySpec{
			id: fmt.Sprintf("evt_idx_%d_%02d", seed, i), typ: types[rng.IntN(len(types))],
			object: fmt.Sprintf("in_idx_%d", rng.IntN(5)), account: []string{"", "acct_idx_1"}[rng.IntN(2)],
			mode: modes[rng.IntN(len(modes))], created: 1756742400 + int64(rng.IntN(10)), inbox: rng.IntN(5) > 0,
		})
	}
	w := &memoryInboxWalk{mem: mem, side: side, clock: clock, rng: rng, specs: specs}
	for step := range 300 {
		switch op := rng.IntN(12); {
		case op < 4:
			sp := specs[rng.IntN(len(specs))]
			h := side.sync
			if sp.inbox {
				h = side.ingest
			}
			idempotencytest.Deliver(h, parityPayload(t, sp), testSecret)
		case op < 5:
			clock.Advance([]time.Duration{time.Second, time.Minute, 3 * time.Minute, time.Hour, 8 * 24 * time.Hour}[rng.IntN(5)])
		case op < 7:
			_, err := side.inbox.WorkDue(ctx)
			require.NoError(t, err)
		case op < 8:
			f := idempotency.RedriveFilter{}
			if rng.IntN(2) == 0 {
				f = randomRedriveFilter(rng, idempotency.MemoryInboxRecords(mem), specs)
			}
			_, _ = side.inbox.Redrive(ctx, f)
		case op < 9:
			_, _ = mem.Forget(ctx, specs[rng.IntN(len(specs))].id)
		case op < 10:
			_, _ = mem.Prune(ctx, idempotency.Retention{Pause: -1, BatchSize: rng.IntN(4), Now: clock.Now,
				Payloads: 24 * time.Hour, DeadLetters: 2 * 24 * time.Hour, Tasks: 140 * 24 * time.Hour})
		default:
			switch rng.IntN(3) {
			case 0: // a worker leases and dies, or resumes late
				ls, err := idempotency.LeaseInbox(ctx, side.inbox, 1+rng.IntN(4))
				require.NoError(t, err)
				side.leased = append(side.leased, ls...)
			case 1:
				for _, l := range side.leased {
					idempotency.ApplyLeased(ctx, side.inbox, l)
				}
				side.leased = nil
			default:
				for _, l := range side.leased {
					idempotency.ReleaseLeased(ctx, side.inbox, l)
				}
				side.leased = nil
			}
		}
		check(step, w)
	}
}

// TestMemoryInboxUnfinishedIndex checks after each step of seeded
// sequences of inbox operations that the rows a MemoryStore's lease looks
// at are exactly the unfinished ones a scan of every row finds, and that
// the rows Stats and List read by kind and state are every row, in order.
func TestMemoryInboxUnfinishedIndex(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			states := map[idempotency.InboxState]bool{}
			walkMemoryInbox(t, seed, func(step int, w *memoryInboxWalk) {
				require.NoError(t, idempotency.MemoryInboxIndexErr(w.mem), "step %d", step)
				st, err := w.side.inbox.Stats(t.Context())
				require.NoError(t, err)
				for s, n := range st.Counts {
					states[s] = states[s] || n > 0
				}
			})
			t.Logf("seed %d: states seen %v", seed, states)
		})
	}
}

// TestMemoryInboxStatsListModel checks after each step of seeded sequences
// of inbox operations that a MemoryStore's Stats, List (random filters,
// and every page of one) and Prune's oldest awaiting event answer what a
// scan of every row answers.
func TestMemoryInboxStatsListModel(t *testing.T) {
	t.Parallel()
	for seed := uint64(11); seed <= 18; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			walkMemoryInbox(t, seed, func(step int, w *memoryInboxWalk) {
				rows := idempotency.MemoryInboxRecords(w.mem)
				st, err := w.side.inbox.Stats(ctx)
				require.NoError(t, err)
				require.Equal(t, scanInboxStats(rows), st, "step %d", step)
				require.Equal(t, scanOldestAwaiting(rows), idempotency.MemoryOldestAwaiting(w.mem), "step %d", step)
				for range 4 {
					f := randomInboxFilter(w.rng, rows, w.specs)
					got, err := w.side.inbox.List(ctx, f)
					require.NoError(t, err, "step %d, filter %+v", step, f)
					want := scanInboxList(rows, f)
					require.Equal(t, want[:min(len(want), cmp.Or(f.Limit, 100))], got, "step %d, filter %+v", step, f)
				}
				// Every page of one filter, each after the last of the one
				// before: every record once.
				f := randomInboxFilter(w.rng, rows, w.specs)
				f.After, f.Limit = idempotency.InboxPosition{}, 1+w.rng.IntN(4)
				var pages []idempotency.InboxRecord
				for {
					page, err := w.side.inbox.List(ctx, f)
					require.NoError(t, err, "step %d, filter %+v", step, f)
					pages = append(pages, page...)
					if len(page) < f.Limit {
						break
					}
					f.After = page[len(page)-1].Position()
				}
				f.After = idempotency.InboxPosition{}
				require.Equal(t, scanInboxList(rows, f), pages, "step %d, pages of %+v", step, f)
			})
		})
	}
}

// TestMemoryInboxRedriveModel checks after each step of seeded sequences
// of inbox operations that a MemoryStore's Redrive, which looks ids up and
// reads the rows of the states it asks for, counts (DryRun) and moves
// (now and then) exactly the rows a scan of every row selects, moving
// them as Redrive moves a row, and leaves every other row as it was.
func TestMemoryInboxRedriveModel(t *testing.T) {
	t.Parallel()
	for seed := uint64(21); seed <= 28; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			counted, moved := 0, 0
			walkMemoryInbox(t, seed, func(step int, w *memoryInboxWalk) {
				rows := idempotency.MemoryInboxRecords(w.mem)
				for range 4 {
					f := randomRedriveFilter(w.rng, rows, w.specs)
					f.DryRun = true
					events, tasks, err := w.side.inbox.RedriveByKind(ctx, f)
					require.NoError(t, err, "step %d, filter %+v", step, f)
					want := scanRedrive(rows, f)
					require.Len(t, want, events+tasks, "step %d, filter %+v", step, f)
					wantTasks := 0
					for _, r := range rows {
						if want[r.EventID] && r.Kind == idempotency.KindTask {
							wantTasks++
						}
					}
					require.Equal(t, wantTasks, tasks, "step %d, filter %+v: tasks", step, f)
					counted += events + tasks
				}
				if w.rng.IntN(4) > 0 {
					return
				}
				f := randomRedriveFilter(w.rng, rows, w.specs)
				want := scanRedrive(rows, f)
				n, err := w.side.inbox.Redrive(ctx, f)
				require.NoError(t, err, "step %d, filter %+v", step, f)
				require.Len(t, want, n, "step %d, filter %+v", step, f)
				moved += n
				now := w.clock.Now().Truncate(time.Microsecond)
				after := map[string]idempotency.InboxRecord{}
				for _, r := range idempotency.MemoryInboxRecords(w.mem) {
					after[r.EventID] = r
				}
				require.Len(t, after, len(rows), "step %d", step)
				for _, r := range rows {
					if want[r.EventID] {
						r.State, r.Attempt = idempotency.InboxPending, 0
						r.NextAttemptAt, r.FinishedAt = now, time.Time{}
						r.Redrives, r.RedrivenAt = r.Redrives+1, now
					}
					require.Equal(t, r, after[r.EventID], "step %d, filter %+v", step, f)
				}
				require.NoError(t, idempotency.MemoryInboxIndexErr(w.mem), "step %d", step)
			})
			t.Logf("seed %d: %d rows counted, %d redriven", seed, counted, moved)
		})
	}
}

// TestMemoryPruneTaskArgsModel checks after steps of seeded sequences of
// inbox operations that a MemoryStore's Prune, which reads the finished
// tasks whose arguments are still to clear in the order they finished,
// clears the arguments of exactly the tasks a scan of every row selects
// (processed or skipped, finished before the window, arguments kept), in
// batches of 1 to 4, and keeps every other task's.
func TestMemoryPruneTaskArgsModel(t *testing.T) {
	t.Parallel()
	for seed := uint64(31); seed <= 38; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			cleared := 0
			walkMemoryInbox(t, seed, func(step int, w *memoryInboxWalk) {
				if w.rng.IntN(3) > 0 {
					return
				}
				window := []time.Duration{time.Minute, time.Hour, 24 * time.Hour, 3 * 24 * time.Hour}[w.rng.IntN(4)]
				cutoff := w.clock.Now().Add(-window).Truncate(time.Microsecond)
				kept := map[string]bool{} // by task id: its arguments are stored
				want := 0
				for _, r := range idempotency.MemoryInboxRecords(w.mem) {
					if r.Kind != idempotency.KindTask {
						continue
					}
					_, stored, err := w.side.inbox.Payload(ctx, r.EventID)
					require.NoError(t, err)
					if stored && (r.State == idempotency.InboxProcessed || r.State == idempotency.InboxSkipped) && r.FinishedAt.Before(cutoff) {
						want++
						stored = false
					}
					kept[r.EventID] = stored
				}
				rep, err := w.mem.Prune(ctx, idempotency.Retention{Pause: -1, BatchSize: 1 + w.rng.IntN(4), Now: w.clock.Now,
					Payloads: window, DeadLetters: 3 * 24 * time.Hour, Tasks: 140 * 24 * time.Hour})
				require.NoError(t, err, "step %d", step)
				require.Equal(t, want, rep.TaskArgsCleared, "step %d, window %v", step, window)
				cleared += rep.TaskArgsCleared
				for _, r := range idempotency.MemoryInboxRecords(w.mem) {
					if r.Kind == idempotency.KindTask {
						_, stored, err := w.side.inbox.Payload(ctx, r.EventID)
						require.NoError(t, err)
						require.Equal(t, kept[r.EventID], stored, "step %d, window %v, task %s (%s, finished %v)", step, window, r.EventID, r.State, r.FinishedAt)
					}
				}
				require.NoError(t, idempotency.MemoryInboxIndexErr(w.mem), "step %d", step)
			})
			t.Logf("seed %d: %d tasks' arguments cleared", seed, cleared)
		})
	}
}

// TestMemoryPruneModel checks after steps of seeded sequences of inbox
// operations, the clock now and then moved past the keys' window, that a
// MemoryStore's Prune, which reads each state's finished rows in the
// order they finished, deletes exactly the rows a scan of every row
// selects (finished events before Payloads, dead letters before
// DeadLetters, dead tasks and finished tasks before their windows, moved
// back for the oldest event awaiting), reports them in batches of 1 to 4
// as a scan would fill them, and keeps every other row.
func TestMemoryPruneModel(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	for seed := uint64(41); seed <= 48; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			deleted := map[string]int{}
			walkMemoryInbox(t, seed, func(step int, w *memoryInboxWalk) {
				if w.rng.IntN(3) > 0 {
					return
				}
				r := idempotency.Retention{Pause: -1, BatchSize: 1 + w.rng.IntN(4), Now: w.clock.Now,
					Payloads: []time.Duration{time.Minute, time.Hour, day, 3 * day}[w.rng.IntN(4)]}
				r.DeadLetters = r.Payloads + []time.Duration{0, time.Hour, 2 * day}[w.rng.IntN(3)]
				keys := idempotency.DefaultEventIDRetention + r.DeadLetters
				r.Tasks = []time.Duration{0, keys, keys + 8*day}[w.rng.IntN(3)]
				if w.rng.IntN(4) == 0 { // to the edge of a window, or past it
					w.clock.Advance([]time.Duration{keys, max(keys, r.Tasks), 50 * day}[w.rng.IntN(3)])
				}
				rows := idempotency.MemoryInboxRecords(w.mem)
				want := scanPrune(rows, r)
				var reports []idempotency.PruneReport
				r.OnBatch = func(rep idempotency.PruneReport) { reports = append(reports, rep) }
				rep, err := w.mem.Prune(ctx, r)
				require.NoError(t, err, "step %d", step)
				require.NoError(t, idempotency.MemoryInboxIndexErr(w.mem), "step %d", step)
				where := fmt.Sprintf("step %d, retention %+v, now %v", step, r, w.clock.Now())
				require.Equal(t, batchSizes(want, r.BatchSize), prunedBatches(t, reports, r.BatchSize), where)
				require.Equal(t, []int{len(want.events), len(want.deadLetters) + len(want.deadTasks), len(want.tasks)},
					[]int{rep.Events, rep.DeadLetters, rep.Tasks}, where)
				left := map[string]bool{}
				for _, rec := range idempotency.MemoryInboxRecords(w.mem) {
					left[rec.EventID] = true
				}
				for _, rec := range rows {
					doomed := slices.Contains(want.events, rec.EventID) || slices.Contains(want.deadLetters, rec.EventID) ||
						slices.Contains(want.deadTasks, rec.EventID) || slices.Contains(want.tasks, rec.EventID)
					require.Equal(t, !doomed, left[rec.EventID], "%s: %s %s %s finished %v", where, rec.EventID, rec.Kind, rec.State, rec.FinishedAt)
				}
				require.Len(t, left, len(rows)-rep.Events-rep.DeadLetters-rep.Tasks, where)
				deleted["events"] += rep.Events
				deleted["dead letters"] += len(want.deadLetters)
				deleted["dead tasks"] += len(want.deadTasks)
				deleted["tasks"] += rep.Tasks
			})
			t.Logf("seed %d: deleted %v", seed, deleted)
		})
	}
}

// prunedRows are the inbox rows a prune deletes, by event id, in the
// order of its steps: finished events, dead-lettered events, dead
// tasks, finished tasks.
type prunedRows struct{ events, deadLetters, deadTasks, tasks []string }

// scanPrune is what a prune with r (EventIDs left to its default) deletes
// of rows, from a scan of every row.
func scanPrune(rows []idempotency.InboxRecord, r idempotency.Retention) prunedRows {
	now := r.Now()
	before := func(d time.Duration) time.Time { return now.Add(-d).Truncate(time.Microsecond) }
	keys := idempotency.DefaultEventIDRetention + r.DeadLetters
	deadTasks, tasks := before(max(keys, r.Tasks)), time.Time{}
	if r.Tasks > 0 {
		tasks = before(r.Tasks)
	}
	// The keys an event awaiting may find stay.
	if oldest := scanOldestAwaiting(rows); !oldest.IsZero() {
		bound := oldest.Add(-idempotency.DefaultEventIDRetention)
		for _, t := range []*time.Time{&deadTasks, &tasks} {
			if !t.IsZero() && bound.Before(*t) {
				*t = bound
			}
		}
	}
	var out prunedRows
	for _, rec := range rows {
		if rec.FinishedAt.IsZero() {
			continue
		}
		var cutoff time.Time
		var to *[]string
		switch task := rec.Kind == idempotency.KindTask; rec.State {
		case idempotency.InboxProcessed, idempotency.InboxSkipped, idempotency.InboxIgnored:
			cutoff, to = before(r.Payloads), &out.events
			if task {
				cutoff, to = tasks, &out.tasks
			}
		case idempotency.InboxDeadLetter:
			cutoff, to = before(r.DeadLetters), &out.deadLetters
			if task {
				cutoff, to = deadTasks, &out.deadTasks
			}
		default:
			continue
		}
		if rec.FinishedAt.Before(cutoff) {
			*to = append(*to, rec.EventID)
		}
	}
	return out
}

// batchSizes is how a prune in batches of n reports p, step by step:
// full batches, then what is left, for each report count (events, dead
// letters, tasks).
func batchSizes(p prunedRows, n int) [3][]int {
	split := func(sizes []int, rows int) []int {
		for ; rows > 0; rows -= n {
			sizes = append(sizes, min(rows, n))
		}
		return sizes
	}
	return [3][]int{split(nil, len(p.events)), split(split(nil, len(p.deadLetters)), len(p.deadTasks)), split(nil, len(p.tasks))}
}

// prunedBatches is the size of each batch of inbox rows reports (OnBatch's,
// in order) tell, for each report count (events, dead letters, tasks); it
// fails t unless each report tells one batch of one count, of 1 to n rows.
func prunedBatches(t *testing.T, reports []idempotency.PruneReport, n int) [3][]int {
	t.Helper()
	var out [3][]int
	var prev idempotency.PruneReport
	for _, rep := range reports {
		grew := 0
		for _, c := range []struct{ rows, count int }{ // count -1: not an inbox row's
			{rep.EventIDs - prev.EventIDs, -1}, {rep.Events - prev.Events, 0}, {rep.DeadLetters - prev.DeadLetters, 1},
			{rep.Tasks - prev.Tasks, 2}, {rep.Guards - prev.Guards, -1}, {rep.Objects - prev.Objects, -1},
			{rep.TaskArgsCleared - prev.TaskArgsCleared, -1},
		} {
			if c.rows == 0 {
				continue
			}
			require.True(t, c.rows > 0 && c.rows <= n, "a batch of %d rows, batch size %d: %+v after %+v", c.rows, n, rep, prev)
			grew++
			if c.count >= 0 {
				out[c.count] = append(out[c.count], c.rows)
			}
		}
		require.Equal(t, 1, grew, "one batch in %+v after %+v", rep, prev)
		prev = rep
	}
	return out
}

// randomRedriveFilter is a filter Redrive takes: randomInboxFilter's
// kind, ids, event type and times, and now and then the id or type of a
// row (a task's) among them and redrivable states repeated (ignored only
// without kind task, which Redrive refuses).
func randomRedriveFilter(rng *rand.Rand, rows []idempotency.InboxRecord, specs []paritySpec) idempotency.RedriveFilter {
	l := randomInboxFilter(rng, rows, specs)
	f := idempotency.RedriveFilter{Kind: l.Kind, EventIDs: l.EventIDs, EventType: l.EventType, Since: l.Since, Until: l.Until}
	if len(rows) > 0 && rng.IntN(3) == 0 {
		r := rows[rng.IntN(len(rows))]
		if len(f.EventIDs) > 0 {
			f.EventIDs = append(f.EventIDs, r.EventID)
		} else {
			f.EventType = r.EventType
		}
	}
	if rng.IntN(3) > 0 {
		for range 1 + rng.IntN(3) {
			st := []idempotency.InboxState{idempotency.InboxDeadLetter, idempotency.InboxFailed, idempotency.InboxIgnored}[rng.IntN(3)]
			if st == idempotency.InboxIgnored && f.Kind == idempotency.KindTask {
				continue // refused: a task is never ignored
			}
			f.States = append(f.States, st)
		}
	}
	return f
}

// scanRedrive is the ids of the records of rows that f selects, each
// record compared with f field by field.
func scanRedrive(rows []idempotency.InboxRecord, f idempotency.RedriveFilter) map[string]bool {
	states := f.States
	if len(states) == 0 {
		states = []idempotency.InboxState{idempotency.InboxDeadLetter}
	}
	out := map[string]bool{}
	for _, r := range rows {
		if (f.Kind == "" || r.Kind == f.Kind) && slices.Contains(states, r.State) &&
			(len(f.EventIDs) == 0 || slices.Contains(f.EventIDs, r.EventID)) &&
			(f.EventType == "" || r.EventType == f.EventType) &&
			(f.Since.IsZero() || !r.ReceivedAt.Before(f.Since)) && (f.Until.IsZero() || r.ReceivedAt.Before(f.Until)) {
			out[r.EventID] = true
		}
	}
	return out
}

// randomInboxFilter is a filter List takes, each field set or not at
// random from what rows and specs hold; its After is where a record is,
// or just before or after it.
func randomInboxFilter(rng *rand.Rand, rows []idempotency.InboxRecord, specs []paritySpec) idempotency.InboxFilter {
	var f idempotency.InboxFilter
	maybe := func() bool { return rng.IntN(3) == 0 }
	someTime := func() time.Time {
		if len(rows) == 0 {
			return time.Now()
		}
		return rows[rng.IntN(len(rows))].ReceivedAt.Add(time.Duration(rng.IntN(3)-1) * time.Microsecond)
	}
	if maybe() {
		f.Kind = []idempotency.InboxKind{idempotency.KindEvent, idempotency.KindTask}[rng.IntN(2)]
	}
	if maybe() {
		all := idempotency.InboxStates()
		for range 1 + rng.IntN(3) {
			f.States = append(f.States, all[rng.IntN(len(all))])
		}
	}
	if rng.IntN(6) == 0 {
		for range 1 + rng.IntN(3) {
			f.EventIDs = append(f.EventIDs, specs[rng.IntN(len(specs))].id)
		}
	}
	if maybe() {
		f.EventType = specs[rng.IntN(len(specs))].typ
	}
	if maybe() {
		f.ObjectID = specs[rng.IntN(len(specs))].object
	}
	if maybe() {
		f.Account = "acct_idx_1"
	}
	if maybe() {
		f.Since = someTime()
	}
	if until := someTime(); maybe() && (f.Since.IsZero() || f.Since.Before(until)) {
		f.Until = until
	}
	if maybe() && len(rows) > 0 {
		f.After = rows[rng.IntN(len(rows))].Position()
		id := f.After.EventID
		f.After.EventID = []string{id, id + "0", id[:len(id)-1]}[rng.IntN(3)] // there, just after, just before
		if rng.IntN(2) == 0 {
			f.After.ReceivedAt = someTime()
		}
	}
	if maybe() {
		f.Limit = 1 + rng.IntN(40)
	}
	if f.Kind == idempotency.KindTask {
		// List refuses an object or an account with kind task, which
		// has neither (TestMemoryStoreConformance/InboxListByAccount).
		f.ObjectID, f.Account = "", ""
	}
	return f
}

// scanInboxStats is what Stats answers on rows, counted one by one.
func scanInboxStats(rows []idempotency.InboxRecord) idempotency.InboxStats {
	st := idempotency.InboxStats{Counts: map[idempotency.InboxState]int{}, TaskCounts: map[idempotency.InboxState]int{}}
	for _, s := range idempotency.InboxStates() {
		st.Counts[s], st.TaskCounts[s] = 0, 0
	}
	for _, r := range rows {
		st.Counts[r.State]++
		if r.Kind == idempotency.KindTask {
			st.TaskCounts[r.State]++
		}
		if !r.State.Final() && (st.OldestPending.IsZero() || r.ReceivedAt.Before(st.OldestPending)) {
			st.OldestPending = r.ReceivedAt
		}
		if r.AttemptedAt.After(st.LastAttempt) {
			st.LastAttempt = r.AttemptedAt
		}
	}
	return st
}

// scanOldestAwaiting is when the oldest event of rows still to be applied
// or dead-lettered was received.
func scanOldestAwaiting(rows []idempotency.InboxRecord) time.Time {
	var oldest time.Time
	for _, r := range rows {
		awaits := r.Kind == idempotency.KindEvent && (!r.State.Final() || r.State == idempotency.InboxDeadLetter)
		if awaits && (oldest.IsZero() || r.ReceivedAt.Before(oldest)) {
			oldest = r.ReceivedAt
		}
	}
	return oldest
}

// scanInboxList is every record of rows that f keeps, newest first, its
// Limit left out.
func scanInboxList(rows []idempotency.InboxRecord, f idempotency.InboxFilter) []idempotency.InboxRecord {
	var out []idempotency.InboxRecord
	for _, r := range rows {
		after := f.After.EventID == "" || r.ReceivedAt.Before(f.After.ReceivedAt) ||
			r.ReceivedAt.Equal(f.After.ReceivedAt) && r.EventID < f.After.EventID
		if (f.Kind == "" || r.Kind == f.Kind) && (len(f.States) == 0 || slices.Contains(f.States, r.State)) &&
			(len(f.EventIDs) == 0 || slices.Contains(f.EventIDs, r.EventID)) &&
			(f.EventType == "" || r.EventType == f.EventType) && (f.ObjectID == "" || r.ObjectID == f.ObjectID) &&
			(f.Account == "" || r.Account == f.Account) &&
			(f.Since.IsZero() || !r.ReceivedAt.Before(f.Since)) && (f.Until.IsZero() || r.ReceivedAt.Before(f.Until)) && after {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b idempotency.InboxRecord) int {
		return cmp.Or(b.ReceivedAt.Compare(a.ReceivedAt), strings.Compare(b.EventID, a.EventID))
	})
	return out
}
