package idempotency

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
	"github.com/seed-a84bb619/idempotency/internal/race"
)

// hotObjectStores are the stores the hot-object benchmarks run on.
var hotObjectStores = []struct {
	name string
	open func(b *testing.B) inboxBackend
}{
	{"memory", func(*testing.B) inboxBackend { return NewMemoryStore() }},
	{"postgres", func(b *testing.B) inboxBackend {
		db := pgtest.New(b)
		s, err := NewPgxStore(db.Pool, PgxConfig{Schema: db.Schema})
		require.NoError(b, err)
		require.NoError(b, s.Migrate(b.Context()))
		return s
	}},
}

// enqueueDue stores a pending event of object, created, received and due
// at at, and returns at a millisecond later, for the next.
func enqueueDue(tb testing.TB, s inboxBackend, id, object string, at time.Time) time.Time {
	tb.Helper()
	r := &inboxRow{Payload: []byte(`{}`), InboxRecord: InboxRecord{
		EventID: id, EventType: "invoice.paid", ObjectID: object, Created: at,
		State: InboxPending, ReceivedAt: at, NextAttemptAt: at,
	}}
	inserted, err := s.inboxEnqueue(tb.Context(), r)
	require.NoError(tb, err)
	require.True(tb, inserted, id)
	return at.Add(time.Millisecond)
}

// BenchmarkInboxLeaseHotObject times one lease of 16 events while 0,
// 1,000 or 5,000 events of one object (a hot object: a meter's error
// reports, a customer a script updates in a loop) wait, stored before 64
// events of objects of their own, on both stores:
//
//	go test -run '^$' -bench InboxLeaseHotObject -benchmem
//
// The events of one object are applied one at a time, in order: all of
// the hot object's events but its first are due and not free. A lease
// takes the first of them and 15 of the others, then each iteration
// gives them back as they were. On PostgreSQL the first lease parks the
// hot object's waiting events but its second (migration 014), and is
// left out of the timing: the leases timed read the hot object's first
// two events, and the one each of them unparks and parks again. The
// memory store looks at every unfinished event on each lease, hot or
// not.
func BenchmarkInboxLeaseHotObject(b *testing.B) {
	sizes := []int{0, 1_000, 5_000}
	if race.Enabled { // a run of the code, not a figure: see internal/race
		sizes = []int{0, 200}
	}
	const limit, others = 16, 64
	for _, st := range hotObjectStores {
		for _, hot := range sizes {
			b.Run(st.name+"/hot="+strconv.Itoa(hot), func(b *testing.B) {
				ctx := b.Context()
				s := st.open(b)
				at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
				enqueue := func(id, object string) { at = enqueueDue(b, s, id, object, at) }
				for i := range hot {
					enqueue(fmt.Sprintf("evt_hot_%06d", i), "in_hot")
				}
				for i := range others {
					enqueue(fmt.Sprintf("evt_other_%06d", i), fmt.Sprintf("in_other_%06d", i))
				}
				lease := func() {
					leased, _, err := s.inboxLease(ctx, at, limit, time.Minute, 3)
					if err != nil || len(leased) != limit {
						b.Fatalf("leased %d: %v", len(leased), err)
					}
					b.StopTimer()
					for _, r := range leased { // given back as they were
						if ok, err := s.inboxSettle(ctx, r.EventID, r.Attempt, r.AttemptedAt, InboxPending, "", r.DueAt, at, true, r.PrevAttemptedAt); !ok || err != nil {
							b.Fatalf("give back %s: %v %v", r.EventID, ok, err)
						}
					}
					b.StartTimer()
				}
				lease() // the first, which parks
				b.ReportAllocs()
				for b.Loop() {
					lease()
				}
			})
		}
	}
}

// BenchmarkInboxDrainHotObject drains 1,000 or 4,000 events of one object
// stored at once, a lease of up to 16 and the end of each attempt at a
// time, on both stores, and reports the time per event:
//
//	go test -run '^$' -bench InboxDrainHotObject -benchmem
//
// Each lease takes the object's next event alone. On PostgreSQL the
// first lease parks the waiting events but the second, and each take
// unparks the next (migration 014): an event's share stays the same
// however many wait. The memory store looks at every unfinished event
// on each lease: an event's share grows with the backlog.
func BenchmarkInboxDrainHotObject(b *testing.B) {
	sizes := []int{1_000, 4_000}
	if race.Enabled { // a run of the code, not a figure: see internal/race
		sizes = []int{100}
	}
	for _, st := range hotObjectStores {
		for _, hot := range sizes {
			b.Run(st.name+"/events="+strconv.Itoa(hot), func(b *testing.B) {
				ctx := b.Context()
				s := st.open(b)
				at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
				round := 0
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					round++
					for i := range hot {
						at = enqueueDue(b, s, fmt.Sprintf("evt_%d_%06d", round, i), "in_hot", at)
					}
					b.StartTimer()
					for done := 0; done < hot; {
						leased, _, err := s.inboxLease(ctx, at, 16, time.Minute, 3)
						if err != nil || len(leased) != 1 {
							b.Fatalf("leased %d after %d: %v", len(leased), done, err)
						}
						r := leased[0]
						if ok, err := s.inboxSettle(ctx, r.EventID, r.Attempt, r.AttemptedAt, InboxProcessed, "", time.Time{}, at, false, time.Time{}); !ok || err != nil {
							b.Fatalf("finish %s: %v %v", r.EventID, ok, err)
						}
						done++
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*hot), "ns/event")
			})
		}
	}
}
