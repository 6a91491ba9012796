package idempotency

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/seed-a84bb619/idempotency/internal/race"
)

// The MemoryStore's inbox reads as its finished rows pile up, as in a long
// test binary that sends thousands of events through one store:
//
//	go test -run '^$' -bench MemoryInbox -benchmem
//
// Each store holds finished events, applied, and 100 pending ones received
// after them. Stats counts them all; List asks for a page of 100 in one
// state: the newest applied events, the applied events past a position
// halfway down (InboxFilter.After), and the pending ones; Lease takes 10
// of the pending events and gives them back. Their cost should follow
// what they return or the unfinished rows, not the finished ones.

// memoryBenchFinished is how many finished rows the benchmarks' stores
// hold beside the rows they read: 1,000, then 50,000. Under -race, where
// CI runs each once as a run of its code (see internal/race), 5,000.
func memoryBenchFinished() []int {
	if race.Enabled {
		return []int{1000, 5000}
	}
	return []int{1000, 50000}
}

// memoryInboxBenchPending is how many events await in a benchmark's store.
const memoryInboxBenchPending = 100

// newMemoryInboxBench is a MemoryStore with finished events applied, then
// memoryInboxBenchPending pending ones, each about an object of its own
// and received a millisecond after the one before; it returns the store,
// the time after the last one was received, and the position of the
// applied event halfway down List's order.
func newMemoryInboxBench(b *testing.B, finished int) (*MemoryStore, time.Time, InboxPosition) {
	s := NewMemoryStore()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fillMemoryInboxBench(b, s, &at, KindEvent, "done", finished, InboxProcessed)
	fillMemoryInboxBench(b, s, &at, KindEvent, "pending", memoryInboxBenchPending, InboxPending)
	half := fmt.Sprintf("evt_done_%06d", finished/2)
	return s, at, s.inbox[half].Position()
}

// fillMemoryInboxBench stores n rows of kind in s, each about an object of
// its own and received a millisecond after the one before from *at on,
// which it moves past them, and leaves them in state: pending as stored,
// or leased and settled as state at *at. s holds no other unfinished row.
func fillMemoryInboxBench(b *testing.B, s *MemoryStore, at *time.Time, kind InboxKind, prefix string, n int, state InboxState) {
	ctx := b.Context()
	for i := range n {
		id := fmt.Sprintf("%s_%s_%06d", map[InboxKind]string{KindEvent: "evt", KindTask: "task:receipt"}[kind], prefix, i)
		r := &inboxRow{InboxRecord: InboxRecord{
			EventID: id, EventType: "invoice.paid", ObjectID: "in_" + id, Created: *at,
			State: InboxPending, ReceivedAt: *at, NextAttemptAt: *at,
		}}
		if kind == KindTask {
			r.Kind, r.EventType, r.ObjectID, r.Payload = KindTask, "receipt", "", []byte(`{"invoice":"`+id+`"}`)
			storeMemoryTask(s, *r)
		} else if _, err := s.inboxEnqueue(ctx, r); err != nil {
			b.Fatal(err)
		}
		*at = at.Add(time.Millisecond)
	}
	if state == InboxPending {
		return
	}
	leased, _, err := s.inboxLease(ctx, *at, n, time.Minute, 3)
	if err != nil || len(leased) != n {
		b.Fatalf("leased %d of %d: %v", len(leased), n, err)
	}
	for _, r := range leased {
		if ok, err := s.inboxSettle(ctx, r.EventID, r.Attempt, r.AttemptedAt, state, "", time.Time{}, *at, false, time.Time{}); !ok || err != nil {
			b.Fatalf("settle %s: %v %v", r.EventID, ok, err)
		}
	}
}

func BenchmarkMemoryInbox(b *testing.B) {
	for _, finished := range memoryBenchFinished() {
		s, now, half := newMemoryInboxBench(b, finished)
		list := func(f InboxFilter, want int) func(b *testing.B) {
			return func(b *testing.B) {
				if err := f.check(); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					recs, err := s.inboxList(b.Context(), f)
					if err != nil || len(recs) != want {
						b.Fatalf("listed %d, want %d: %v", len(recs), want, err)
					}
				}
			}
		}
		b.Run(fmt.Sprint("stats/finished=", finished), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				st, err := s.inboxStats(b.Context())
				if err != nil || st.Counts[InboxPending] != memoryInboxBenchPending {
					b.Fatalf("%v %v", st.Counts, err)
				}
			}
		})
		b.Run(fmt.Sprint("list/finished=", finished),
			list(InboxFilter{States: []InboxState{InboxProcessed}, Limit: 100}, 100))
		b.Run(fmt.Sprint("list_after/finished=", finished),
			list(InboxFilter{States: []InboxState{InboxProcessed}, After: half, Limit: 100}, 100))
		b.Run(fmt.Sprint("list_pending/finished=", finished),
			list(InboxFilter{States: []InboxState{InboxPending}, Limit: 100}, memoryInboxBenchPending))
		b.Run(fmt.Sprint("lease/finished=", finished), func(b *testing.B) {
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				leased, _, err := s.inboxLease(ctx, now, 10, time.Minute, 3)
				if err != nil || len(leased) != 10 {
					b.Fatalf("leased %d: %v", len(leased), err)
				}
				for _, r := range leased { // given back as they were
					if ok, err := s.inboxSettle(ctx, r.EventID, r.Attempt, r.AttemptedAt, InboxPending, "", r.DueAt, now, true, r.PrevAttemptedAt); !ok || err != nil {
						b.Fatalf("give back %s: %v %v", r.EventID, ok, err)
					}
				}
			}
		})
	}
}

// memoryRedriveBenchDead is how many dead-lettered events a redrive
// benchmark's store holds.
const memoryRedriveBenchDead = 100

// BenchmarkMemoryInboxRedrive redrives dead-lettered events beside
// finished ones, applied, as a store keeps them until Prune:
//
//	go test -run '^$' -bench MemoryInboxRedrive -benchmem
//
// The store holds the finished events, then memoryRedriveBenchDead
// dead-lettered ones received after them. Redrive asks for 10 of them by
// id, for every dead letter, and for the dead letters received in the
// newer half of theirs; each iteration puts the redriven events back as
// dead letters. Its cost should follow the events it moves, not the
// finished ones.
func BenchmarkMemoryInboxRedrive(b *testing.B) {
	for _, finished := range memoryBenchFinished() {
		s := NewMemoryStore()
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		fillMemoryInboxBench(b, s, &at, KindEvent, "done", finished, InboxProcessed)
		fillMemoryInboxBench(b, s, &at, KindEvent, "dead", memoryRedriveBenchDead, InboxDeadLetter)
		var ids []string
		for i := range 10 {
			ids = append(ids, fmt.Sprintf("evt_dead_%06d", i*memoryRedriveBenchDead/10))
		}
		half := s.inbox[fmt.Sprintf("evt_dead_%06d", memoryRedriveBenchDead/2)].ReceivedAt
		redrive := func(f RedriveFilter, want int) func(b *testing.B) {
			return func(b *testing.B) {
				if err := f.check(); err != nil {
					b.Fatal(err)
				}
				ctx := b.Context()
				b.ReportAllocs()
				for b.Loop() {
					events, tasks, err := s.inboxRedrive(ctx, f, at)
					n := events + tasks
					if err != nil || n != want {
						b.Fatalf("redrove %d, want %d: %v", n, want, err)
					}
					// Back to dead letters, as an attempt leaves them.
					s.mu.Lock()
					redriven := slices.Collect(s.inboxRowsIn(KindEvent, InboxPending).all)
					for _, r := range redriven { // not while the walk reads the order
						r.State, r.Attempt, r.NextAttemptAt, r.FinishedAt = InboxDeadLetter, 3, time.Time{}, at
						s.indexInboxRow(r)
					}
					s.mu.Unlock()
				}
			}
		}
		b.Run(fmt.Sprint("ids/finished=", finished), redrive(RedriveFilter{EventIDs: ids}, len(ids)))
		b.Run(fmt.Sprint("dead_letter/finished=", finished), redrive(RedriveFilter{}, memoryRedriveBenchDead))
		b.Run(fmt.Sprint("since/finished=", finished), redrive(RedriveFilter{Since: half}, memoryRedriveBenchDead/2))
	}
}

// BenchmarkMemoryPruneTaskArgs prunes a store that keeps finished tasks
// whose arguments an earlier prune cleared, and 100 finished since,
// whose arguments are kept yet, as a service's store holds them between
// two runs of PruneEvery:
//
//	go test -run '^$' -bench MemoryPruneTaskArgs -benchmem
//
// Nothing is to be cleared or deleted; the prune's cost should follow what
// it clears, not the tasks cleared before.
func BenchmarkMemoryPruneTaskArgs(b *testing.B) {
	for _, finished := range memoryBenchFinished() {
		s := NewMemoryStore()
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		fillMemoryInboxBench(b, s, &at, KindTask, "cleared", finished, InboxProcessed)
		at = at.Add(DefaultPayloadRetention + time.Hour)
		r := Retention{Pause: -1, Now: func() time.Time { return at }}
		if rep, err := s.Prune(b.Context(), r); err != nil || rep.TaskArgsCleared != finished {
			b.Fatalf("cleared %d of %d: %v", rep.TaskArgsCleared, finished, err)
		}
		fillMemoryInboxBench(b, s, &at, KindTask, "kept", 100, InboxProcessed)
		b.Run(fmt.Sprint("finished=", finished), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if rep, err := s.Prune(b.Context(), r); err != nil || rep != (PruneReport{}) {
					b.Fatalf("%+v %v", rep, err)
				}
			}
		})
	}
}

// BenchmarkMemoryPrune prunes a store that keeps finished rows none of
// which is old enough to delete, as a service's store holds them between
// two runs of PruneEvery:
//
//	go test -run '^$' -bench 'MemoryPrune$' -benchmem
//
// The store holds the finished events, applied, then 100 dead-lettered
// events and 100 applied tasks (their arguments cleared), all finished
// within their windows; every step that deletes inbox rows runs
// (Retention.Tasks is set). The prune's cost should follow what it
// deletes, not the rows it keeps.
func BenchmarkMemoryPrune(b *testing.B) {
	for _, finished := range memoryBenchFinished() {
		s := NewMemoryStore()
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		fillMemoryFinished(s, &at, KindEvent, "done", finished, InboxProcessed)
		fillMemoryFinished(s, &at, KindEvent, "dead", 100, InboxDeadLetter)
		fillMemoryFinished(s, &at, KindTask, "done", 100, InboxProcessed)
		r := Retention{Pause: -1, Now: func() time.Time { return at }, Tasks: 365 * 24 * time.Hour}
		b.Run(fmt.Sprint("finished=", finished), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if rep, err := s.Prune(b.Context(), r); err != nil || rep != (PruneReport{}) {
					b.Fatalf("%+v %v", rep, err)
				}
			}
		})
	}
}

// fillMemoryFinished stores n rows of kind in s, each about an object of
// its own, received and finished in state a millisecond after the one
// before from *at on, which it moves past them; a task's arguments are
// cleared. They are stored as they are, under one lock, not leased and
// settled: CI runs each benchmark once under the race detector, and its
// 50,000 rows are filled in about a second.
func fillMemoryFinished(s *MemoryStore, at *time.Time, kind InboxKind, prefix string, n int, state InboxState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	name := map[InboxKind]string{KindEvent: "evt_", KindTask: "task:receipt_"}[kind] + prefix + "_"
	for i := range n {
		id := name + strconv.Itoa(1000000 + i)[1:]
		r := &memoryInboxRow{inboxRow: inboxRow{InboxRecord: InboxRecord{
			Kind: kind, EventID: id, EventType: "invoice.paid", ObjectID: "in_" + id, Created: *at,
			State: state, Attempt: 1, ReceivedAt: *at, AttemptedAt: *at, FinishedAt: *at,
		}, Payload: []byte(`{"id":"` + id + `"}`)}}
		if kind == KindTask {
			r.EventType, r.ObjectID, r.Payload = "receipt", "", nil
		}
		s.inbox[id] = r
		s.indexInboxRow(r)
		*at = at.Add(time.Millisecond)
	}
}
