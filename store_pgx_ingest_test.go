package idempotency

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

func newIngestStore(t *testing.T) (*PgxStore, *pgtest.DB) {
	t.Helper()
	return newIngestStoreIn(t, pgtest.New(t))
}

// newIngestStoreIn is newIngestStore on db.
func newIngestStoreIn(t *testing.T, db *pgtest.DB) (*PgxStore, *pgtest.DB) {
	t.Helper()
	// No memory of stored ids: every delivery goes to the database.
	s, err := NewPgxStore(db.Pool, PgxConfig{Schema: db.Schema, RecentClaims: -1})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(t.Context()))
	return s, db
}

// waitIngest waits until cond, called with g.mu held, is true.
func waitIngest(t *testing.T, g *ingest, cond func() bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return cond()
	}, 10*time.Second, time.Millisecond)
}

func ingestRow(id string) *inboxRow {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return &inboxRow{InboxRecord: InboxRecord{EventID: id, EventType: "invoice.paid", ObjectID: "in_" + id,
		Created: now, State: InboxPending, ReceivedAt: now, NextAttemptAt: now}, Payload: []byte(`{"id":"` + id + `"}`)}
}

// One insert stores a batch; copies of one id in it, or of an id stored
// before, are told so.
func TestPgxIngestBatch(t *testing.T) {
	t.Parallel()
	s, db := newIngestStore(t)
	send := func(ids ...string) []bool {
		batch := make([]*ingestReq, len(ids))
		for i, id := range ids {
			batch[i] = &ingestReq{ctx: t.Context(), row: ingestRow(id), done: make(chan struct{})}
		}
		s.insertIngest(batch)
		got := make([]bool, len(ids))
		for i, req := range batch {
			<-req.done
			require.NoError(t, req.err)
			got[i] = req.inserted
		}
		return got
	}
	require.Equal(t, []bool{true, true, false, true, false}, send("evt_a", "evt_b", "evt_a", "evt_c", "evt_b"))
	require.Equal(t, []bool{false, true}, send("evt_a", "evt_d"))
	var n int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM idempotency_inbox`).Scan(&n))
	require.Equal(t, 4, n)
}

// A row PostgreSQL refuses fails only its own deliveries: the events
// batched with it are stored and answered as if it had not been there.
// (The Handler refuses such rows before they reach the store; this is the
// store's own defence.)
func TestPgxIngestBadRowFailsOnlyItself(t *testing.T) {
	t.Parallel()
	s, db := newIngestStore(t)
	bad := ingestRow("evt_bad")
	bad.Created = time.Unix(1e13, 0) // beyond timestamptz's range
	nul := ingestRow("evt_nul")
	nul.APIVersion = "2025-08-27.basil\x00"
	batch := []*ingestReq{
		{row: ingestRow("evt_good")},
		{row: bad},
		{row: ingestRow("evt_known")},
		{row: nul},
		{row: ingestRow("evt_good")},
	}
	_, err := s.inboxEnqueue(t.Context(), ingestRow("evt_known"))
	require.NoError(t, err)
	for _, req := range batch {
		req.ctx, req.done = t.Context(), make(chan struct{})
	}
	s.insertIngest(batch)
	for _, req := range batch {
		<-req.done
	}
	require.NoError(t, batch[0].err)
	require.True(t, batch[0].inserted, "evt_good stored by its first delivery")
	require.ErrorContains(t, batch[1].err, "timestamp out of range")
	require.NoError(t, batch[2].err)
	require.False(t, batch[2].inserted, "evt_known was stored before")
	require.ErrorContains(t, batch[3].err, "invalid byte sequence")
	require.NoError(t, batch[4].err)
	require.False(t, batch[4].inserted, "evt_good's copy")
	rows, err := db.Pool.Query(t.Context(), `SELECT event_id FROM idempotency_inbox ORDER BY event_id`)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"evt_good", "evt_known"}, ids)
}

// A delivery that gave up before its batch was sent does not fail the
// others': the insert runs as long as the most patient one allows.
func TestPgxIngestBatchOutlivesImpatientDelivery(t *testing.T) {
	t.Parallel()
	s, _ := newIngestStore(t)
	gaveUp, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	patient, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	batch := []*ingestReq{
		{ctx: gaveUp, row: ingestRow("evt_gave_up"), done: make(chan struct{})},
		{ctx: patient, row: ingestRow("evt_patient"), done: make(chan struct{})},
	}
	s.insertIngest(batch)
	for _, req := range batch {
		<-req.done
		require.NoError(t, req.err, req.row.EventID)
		require.True(t, req.inserted, req.row.EventID)
	}
}

// Concurrent deliveries, sharing inserts as they come: each id is stored
// once and reported stored to exactly one of its deliveries.
func TestPgxIngestConcurrent(t *testing.T) {
	t.Parallel()
	s, db := newIngestStore(t)
	const ids, copies = 50, 4
	inserted := make([]int, ids)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := range copies {
		for i := range ids {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				ok, err := s.inboxEnqueue(ctx, ingestRow(fmt.Sprintf("evt_%d", i)))
				if err != nil {
					t.Errorf("copy %d of evt_%d: %v", c, i, err)
				}
				if ok {
					mu.Lock()
					inserted[i]++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	for i, n := range inserted {
		require.Equal(t, 1, n, "evt_%d reported stored", i)
	}
	var n int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM idempotency_inbox`).Scan(&n))
	require.Equal(t, ids, n)
}

// Two batches that hold the same events in opposite orders must not
// deadlock: each would insert its first row, then wait for the other's.
// A transaction of the test's holds one of the events uncommitted, both
// batches wait for it, and it rolls back; PostgreSQL then wakes both, and
// without one order of insertion the batch that inserted its own first row
// and the one that takes the released row wait for each other (40P01),
// which fails every delivery of the losing batch with 503.
func TestPgxIngestBatchesInOppositeOrders(t *testing.T) {
	t.Parallel()
	s, db := newIngestStore(t)
	waiting := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool {
			got, err := pgtest.LockWaiters(t, db.Schema)
			require.NoError(t, err)
			return got == n
		}, 10*time.Second, time.Millisecond, "%d inserts waiting", n)
	}
	for round := range 8 {
		x, y := fmt.Sprintf("evt_x_%d", round), fmt.Sprintf("evt_y_%d", round)
		holder, err := db.Pool.Begin(t.Context())
		require.NoError(t, err)
		_, err = s.insertOne(t.Context(), holder, ingestRow(x))
		require.NoError(t, err)

		var batches [2][]*ingestReq
		var wg sync.WaitGroup
		for i, ids := range [][]string{{y, x}, {x, y}} {
			for _, id := range ids {
				batches[i] = append(batches[i], &ingestReq{ctx: t.Context(), row: ingestRow(id), done: make(chan struct{})})
			}
			wg.Go(func() { s.insertIngest(batches[i]) })
			waiting(i + 1) // the first batch waits for x before the second starts
		}
		require.NoError(t, holder.Rollback(t.Context()))
		wg.Wait()
		stored := map[string]int{}
		for _, batch := range batches {
			for _, req := range batch {
				require.NoError(t, req.err, "round %d: %s", round, req.row.EventID)
				if req.inserted {
					stored[req.row.EventID]++
				}
			}
		}
		require.Equal(t, map[string]int{x: 1, y: 1}, stored, "round %d", round)
	}
}
