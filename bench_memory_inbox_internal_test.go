package idempotency

import (
	"fmt"
	"testing"
	"time"
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

// memoryInboxBenchPending is how many events await in a benchmark's store.
const memoryInboxBenchPending = 100

// newMemoryInboxBench is a MemoryStore with finished events applied, then
// memoryInboxBenchPending pending ones, each about an object of its own
// and received a millisecond after the one before; it returns the store,
// the time after the last one was received, and the position of the
// applied event halfway down List's order.
func newMemoryInboxBench(b *testing.B, finished int) (*MemoryStore, time.Time, InboxPosition) {
	ctx := b.Context()
	s := NewMemoryStore()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	enqueue := func(n int, prefix string) {
		for i := range n {
			id := fmt.Sprintf("evt_%s_%06d", prefix, i)
			if _, err := s.inboxEnqueue(ctx, &inboxRow{InboxRecord: InboxRecord{
				EventID: id, EventType: "invoice.paid", ObjectID: "in_" + id, Created: at,
				State: InboxPending, ReceivedAt: at, NextAttemptAt: at,
			}}); err != nil {
				b.Fatal(err)
			}
			at = at.Add(time.Millisecond)
		}
	}
	enqueue(finished, "done")
	leased, _, err := s.inboxLease(ctx, at, finished, time.Minute, 3)
	if err != nil || len(leased) != finished {
		b.Fatalf("leased %d of %d: %v", len(leased), finished, err)
	}
	for _, r := range leased {
		if ok, err := s.inboxSettle(ctx, r.EventID, r.Attempt, r.AttemptedAt, InboxProcessed, "", time.Time{}, at, r.AttemptedAt); !ok || err != nil {
			b.Fatalf("settle %s: %v %v", r.EventID, ok, err)
		}
	}
	enqueue(memoryInboxBenchPending, "pending")
	half := fmt.Sprintf("evt_done_%06d", finished/2)
	return s, at, s.inbox[half].Position()
}

func BenchmarkMemoryInbox(b *testing.B) {
	for _, finished := range []int{1000, 50000} {
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
					if ok, err := s.inboxSettle(ctx, r.EventID, r.Attempt, r.AttemptedAt, InboxPending, "", r.DueAt, now, r.PrevAttemptedAt); !ok || err != nil {
						b.Fatalf("give back %s: %v %v", r.EventID, ok, err)
					}
				}
			}
		})
	}
}
