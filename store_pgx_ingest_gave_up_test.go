package idempotency

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A delivery that gives up while it waits for a place among the inserts
// (every sender busy) is answered 503, and its event is then not stored by
// a later insert behind its back: a 503 means "stored: nothing" (README),
// and the answer a delivery gets is the truth about its row.
func TestPgxIngestGaveUpWhileWaitingIsNotStored(t *testing.T) {
	t.Parallel()
	s, db := newIngestStore(t)
	g := &s.ingest
	g.mu.Lock()
	g.senders = ingestSenders // every sender busy: the delivery waits
	g.mu.Unlock()

	ctx, cancel := context.WithCancel(t.Context())
	answered := make(chan error, 1)
	go func() {
		_, err := s.inboxEnqueue(ctx, ingestRow("evt_gave_up"))
		answered <- err
	}()
	waitIngest(t, g, func() bool { return len(g.pending) == 1 })
	cancel()
	require.ErrorIs(t, <-answered, context.Canceled)

	// The senders free up; the next delivery sends what waits.
	g.mu.Lock()
	g.senders = 0
	g.mu.Unlock()
	ok, err := s.inboxEnqueue(t.Context(), ingestRow("evt_next"))
	require.NoError(t, err)
	require.True(t, ok)
	var n int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM idempotency_inbox WHERE event_id = 'evt_gave_up'`).Scan(&n))
	require.Zero(t, n, "evt_gave_up was answered 503 and must not be stored")
}

// A delivery whose insert committed is answered so, even when its own
// deadline passed meanwhile (its batch ran to a later one): it is not told
// 503, which would say nothing was stored, and its copy not queued.
func TestPgxIngestCommittedAnswerWinsOverDeadline(t *testing.T) {
	t.Parallel()
	s, _ := newIngestStore(t)
	g := &s.ingest
	for i := range 32 {
		patient, cancel := context.WithTimeout(t.Context(), time.Minute)
		other := &ingestReq{ctx: patient, row: ingestRow(fmt.Sprintf("evt_patient_%d", i)), done: make(chan struct{})}
		g.mu.Lock()
		g.pending = append(g.pending, other) // waits; the next delivery sends it with its own
		g.mu.Unlock()
		gaveUp, cancel2 := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
		ok, err := s.inboxEnqueue(gaveUp, ingestRow(fmt.Sprintf("evt_late_%d", i)))
		cancel2()
		<-other.done
		cancel()
		require.NoError(t, other.err)
		require.NoError(t, err, "round %d: evt_late_%d was stored by its batch", i, i)
		require.True(t, ok, "round %d", i)
	}
}

// Two copies of one event share an insert, and the first gives up while
// the insert waits (another transaction holds the id, and rolls back): the
// insert stores the event, and the copy still waiting is told so
// (queued), rather than duplicate while the copy that was to be told
// queued had already been answered 503: one copy of the two is queued.
func TestPgxIngestCopyThatGaveUpLeavesQueuedToTheOther(t *testing.T) {
	t.Parallel()
	s, db := newIngestStore(t)
	g := &s.ingest
	holder, err := db.Pool.Begin(t.Context())
	require.NoError(t, err)
	defer holder.Rollback(context.Background()) //nolint:errcheck // rolled back below
	_, err = s.insertOne(t.Context(), holder, ingestRow("evt_copies"))
	require.NoError(t, err)

	g.mu.Lock()
	g.senders = ingestSenders // the first copy waits for a sender
	g.mu.Unlock()
	impatient, giveUp := context.WithCancel(t.Context())
	type answer struct {
		ok  bool
		err error
	}
	first := make(chan answer, 1)
	go func() {
		ok, err := s.inboxEnqueue(impatient, ingestRow("evt_copies"))
		first <- answer{ok, err}
	}()
	waitIngest(t, g, func() bool { return len(g.pending) == 1 })
	g.mu.Lock()
	g.senders = 0
	g.mu.Unlock()
	second := make(chan answer, 1)
	go func() { // sends both copies, and waits for the holder
		ok, err := s.inboxEnqueue(t.Context(), ingestRow("evt_copies"))
		second <- answer{ok, err}
	}()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, db.Pool.QueryRow(t.Context(),
			`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND application_name = $1`, db.Schema).Scan(&n))
		return n == 1
	}, 10*time.Second, time.Millisecond, "the shared insert waits for the holder")
	giveUp()
	a := <-first
	require.ErrorIs(t, a.err, context.Canceled)
	require.NoError(t, holder.Rollback(t.Context()))
	b := <-second
	require.NoError(t, b.err)
	require.True(t, b.ok, "the shared insert stored evt_copies: the copy answered 200 is queued")
}
