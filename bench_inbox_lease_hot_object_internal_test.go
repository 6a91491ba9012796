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
// gives them back as they were. On PostgreSQL the lease reads the due
// events in the order they came due and steps over each waiting event
// of the hot object with a probe of its object's events, under the lock
// every lease of the schema takes: its cost grows with the hot object's
// waiting events, and every process's next lease waits for it. The memory
// store looks at every unfinished event on each lease, hot or not.
func BenchmarkInboxLeaseHotObject(b *testing.B) {
	sizes := []int{0, 1_000, 5_000}
	if race.Enabled { // a run of the code, not a figure: see internal/race
		sizes = []int{0, 200}
	}
	stores := []struct {
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
	const limit, others = 16, 64
	for _, st := range stores {
		for _, hot := range sizes {
			b.Run(st.name+"/hot="+strconv.Itoa(hot), func(b *testing.B) {
				ctx := b.Context()
				s := st.open(b)
				at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
				enqueue := func(id, object string) {
					r := &inboxRow{Payload: []byte(`{}`), InboxRecord: InboxRecord{
						EventID: id, EventType: "invoice.paid", ObjectID: object, Created: at,
						State: InboxPending, ReceivedAt: at, NextAttemptAt: at,
					}}
					inserted, err := s.inboxEnqueue(ctx, r)
					require.NoError(b, err)
					require.True(b, inserted)
					at = at.Add(time.Millisecond)
				}
				for i := range hot {
					enqueue(fmt.Sprintf("evt_hot_%06d", i), "in_hot")
				}
				for i := range others {
					enqueue(fmt.Sprintf("evt_other_%06d", i), fmt.Sprintf("in_other_%06d", i))
				}
				b.ReportAllocs()
				for b.Loop() {
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
			})
		}
	}
}
