package idempotency

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestInboxOrderModel adds and removes thousands of rows, many received in
// the same microsecond, to an inboxOrder, its blocks splitting and
// emptying, and checks after each batch that it holds exactly the rows a
// sorted slice holds, and that a walk down from any position, one of its
// rows or none, yields the rows of the slice before it.
func TestInboxOrderModel(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(38, 1))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var o inboxOrder
	var model []*memoryInboxRow // in order
	position := func() InboxPosition {
		return InboxPosition{ReceivedAt: at.Add(time.Duration(rng.IntN(400)) * time.Microsecond), EventID: fmt.Sprintf("evt_%03d", rng.IntN(1000))}
	}
	for batch := range 60 {
		grow := batch%20 < 12 // grow, then shrink, three times
		for range 200 {
			if len(model) > 0 && (!grow && rng.IntN(4) > 0 || rng.IntN(4) == 0) {
				i := rng.IntN(len(model))
				o.remove(model[i])
				model = slices.Delete(model, i, i+1)
				continue
			}
			p := position()
			i, found := slices.BinarySearchFunc(model, p, func(r *memoryInboxRow, p InboxPosition) int { return comparePosition(r.Position(), p) })
			r := &memoryInboxRow{inboxRow: inboxRow{InboxRecord: InboxRecord{ReceivedAt: p.ReceivedAt, EventID: p.EventID}}}
			if found { // a row not there is not removed
				o.remove(r)
				continue
			}
			o.insert(r)
			model = slices.Insert(model, i, r)
		}
		require.Equal(t, len(model), o.n, "batch %d", batch)
		for _, rows := range o.blocks {
			require.NotEmpty(t, rows)
			require.LessOrEqual(t, len(rows), inboxOrderBlock)
		}
		require.Equal(t, model, slices.Collect(o.all), "batch %d", batch)
		if len(model) > 0 {
			require.Same(t, model[0], o.oldest())
		} else {
			require.Nil(t, o.oldest())
		}
		starts := []*InboxPosition{nil}
		for range 20 {
			p := position()
			if len(model) > 0 && rng.IntN(2) == 0 {
				p = model[rng.IntN(len(model))].Position()
			}
			starts = append(starts, &p)
		}
		for _, p := range starts {
			var want []*memoryInboxRow
			for _, r := range slices.Backward(model) {
				if p == nil || comparePosition(r.Position(), *p) < 0 {
					want = append(want, r)
				}
			}
			var got []*memoryInboxRow
			for c := o.below(p); c.row() != nil; c.next() {
				got = append(got, c.row())
			}
			require.Equal(t, want, got, "batch %d, below %v", batch, p)
		}
	}
	t.Logf("%d rows in %d blocks at the end", o.n, len(o.blocks))
}

// storeMemoryTask stores a task's row in s as a committed transaction
// stores the tasks it enqueued.
func storeMemoryTask(s *MemoryStore, r inboxRow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	row := &memoryInboxRow{inboxRow: r}
	s.inbox[r.EventID] = row
	s.indexInboxRow(row)
}

// TestMemoryTaskArgsModel runs seeded sequences of thousands of inbox
// operations on a MemoryStore (tasks and events stored, leased and
// settled in every state or left to expire, redriven, forgotten, the
// clock moved on, prunes with windows from a microsecond to a week in
// batches of 1 to 5) and checks that each prune clears the arguments of
// exactly the tasks a scan of every row selects (processed or skipped,
// finished before the window, arguments kept), keeps every other's, and
// that the tasks whose arguments are to clear are filed in step after
// every step that may have changed the store (a step that moved only the
// clock, or whose lease, redrive or forget did nothing, changed nothing).
func TestMemoryTaskArgsModel(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			rng := rand.New(rand.NewPCG(seed, 39))
			s := NewMemoryStore()
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			stored, cleared, deleted := 0, 0, 0
			for step := range 2000 {
				changed := true // whether the step may have changed the store: only then are its indexes checked
				switch op := rng.IntN(10); {
				case op < 2:
					id := fmt.Sprintf("task:receipt:%d", stored)
					var args []byte
					if rng.IntN(8) > 0 {
						args = []byte(`{"n":1}`)
					}
					storeMemoryTask(s, inboxRow{InboxRecord: InboxRecord{Kind: KindTask, EventID: id, EventType: "receipt",
						State: InboxPending, ReceivedAt: now, NextAttemptAt: now}, Payload: args})
					stored++
				case op < 3:
					_, err := s.inboxEnqueue(ctx, &inboxRow{InboxRecord: InboxRecord{EventID: fmt.Sprintf("evt_%d", stored),
						EventType: "invoice.paid", State: InboxPending, ReceivedAt: now, NextAttemptAt: now}})
					require.NoError(t, err)
					stored++
				case op < 5:
					leased, dead, err := s.inboxLease(ctx, now, 1+rng.IntN(8), time.Minute, 3)
					require.NoError(t, err)
					changed = len(leased)+len(dead) > 0
					for _, r := range leased {
						st := []InboxState{InboxProcessed, InboxProcessed, InboxSkipped, InboxFailed, InboxDeadLetter, InboxPending, ""}[rng.IntN(7)]
						if st == "" {
							continue // its worker died: the lease expires
						}
						_, err := s.inboxSettle(ctx, r.EventID, r.Attempt, r.AttemptedAt, st, "", now.Add(time.Minute), now, st == InboxPending, r.PrevAttemptedAt)
						require.NoError(t, err)
					}
				case op < 6:
					now = now.Add(time.Duration(rng.Int64N(int64(3 * 24 * time.Hour))))
					changed = false
				case op < 7:
					f := RedriveFilter{States: []InboxState{[]InboxState{InboxDeadLetter, InboxFailed}[rng.IntN(2)]}}
					if rng.IntN(2) == 0 {
						f.Kind = KindTask
					}
					if stored > 0 && rng.IntN(3) == 0 {
						f.Since = now.Add(-time.Duration(rng.Int64N(int64(10 * 24 * time.Hour))))
					}
					require.NoError(t, f.check())
					events, tasks, err := s.inboxRedrive(ctx, f, now)
					require.NoError(t, err)
					changed = events+tasks > 0
				case op < 8:
					forgot, err := s.Forget(ctx, fmt.Sprintf("evt_%d", rng.IntN(stored+1)))
					changed = forgot && err == nil // refused (still to be applied) or not found: nothing changed
				default:
					window := []time.Duration{time.Microsecond, time.Minute, time.Hour, 24 * time.Hour, 7 * 24 * time.Hour}[rng.IntN(5)]
					cutoff := kept(now.Add(-window))
					want := map[string]bool{} // by task id: its arguments are kept
					toClear := 0
					s.mu.Lock()
					for id, r := range s.inbox { // a scan of every row
						if r.Kind != KindTask {
							continue
						}
						finished := r.State == InboxProcessed || r.State == InboxSkipped
						want[id] = len(r.Payload) > 0 && !(finished && !r.FinishedAt.IsZero() && r.FinishedAt.Before(cutoff))
						if len(r.Payload) > 0 && !want[id] {
							toClear++
						}
					}
					s.mu.Unlock()
					r := Retention{Pause: -1, BatchSize: 1 + rng.IntN(5), Now: func() time.Time { return now },
						Payloads: window, DeadLetters: 7 * 24 * time.Hour}
					if rng.IntN(2) == 0 {
						r.Tasks = 60 * 24 * time.Hour
					}
					rep, err := s.Prune(ctx, r)
					require.NoError(t, err, "step %d", step)
					require.Equal(t, toClear, rep.TaskArgsCleared, "step %d, window %v", step, window)
					cleared += rep.TaskArgsCleared
					deleted += rep.Tasks
					var wrong []string
					s.mu.Lock()
					for id, kept := range want {
						if r := s.inbox[id]; r != nil && kept != (len(r.Payload) > 0) {
							wrong = append(wrong, fmt.Sprintf("task %s (%s, finished %v): arguments kept %v, want %v", id, r.State, r.FinishedAt, !kept, kept))
						}
					}
					s.mu.Unlock()
					require.Empty(t, wrong, "step %d, window %v", step, window)
				}
				if changed {
					require.NoError(t, MemoryInboxIndexErr(s), "step %d", step)
				}
			}
			t.Logf("seed %d: %d rows stored, %d tasks' arguments cleared, %d finished tasks deleted, %d still to clear",
				seed, stored, cleared, deleted, s.taskArgs.n)
		})
	}
}
