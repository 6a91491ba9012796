package idempotency

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// ingestTracer is a user's pgx tracer that panics on the inbox's inserts
// while panics is set. When hold is not nil, the first insert it sees
// waits for hold to close, and tells held it waits.
type ingestTracer struct {
	panics     atomic.Bool
	hold, held chan struct{}
	inserts    atomic.Int32
}

func (tr *ingestTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if !strings.HasPrefix(data.SQL, "INSERT INTO") || !strings.Contains(data.SQL, "idempotency_inbox") {
		return ctx
	}
	if tr.inserts.Add(1) == 1 && tr.hold != nil {
		close(tr.held)
		<-tr.hold
		return ctx
	}
	if tr.panics.Load() {
		panic("tracer: boom")
	}
	return ctx
}

func (tr *ingestTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func newTracedIngestStore(t *testing.T, tr *ingestTracer) (*PgxStore, *pgtest.DB) {
	t.Helper()
	return newIngestStoreIn(t, pgtest.NewWithConfig(t, func(c *pgxpool.Config) { c.ConnConfig.Tracer = tr }))
}

// queueBehindBusySenders takes every sender's place, so that no
// delivery sends an insert, sends n deliveries (prefix_0, prefix_1, ...)
// and returns once they all wait together; they answer on the channel it
// returns, which has room for one more.
func queueBehindBusySenders(t *testing.T, s *PgxStore, prefix string, n int) chan ingestAnswer {
	t.Helper()
	g := &s.ingest
	g.mu.Lock()
	g.senders = ingestSenders
	g.mu.Unlock()
	answers := make(chan ingestAnswer, n+1)
	for i := range n {
		enqueueAsync(s, fmt.Sprintf("%s_%d", prefix, i), answers)
	}
	waitIngest(t, g, func() bool { return len(g.pending) == n })
	return answers
}

type ingestAnswer struct {
	id       string
	inserted bool
	err      error
	panicked any
}

// enqueueAsync sends id's delivery, as a Handler does, and answers on ch;
// a panic that reaches the delivery is answered too, rather than ending
// the test binary.
func enqueueAsync(s *PgxStore, id string, ch chan<- ingestAnswer) {
	go func() {
		a := ingestAnswer{id: id}
		defer func() {
			a.panicked = recover()
			ch <- a
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // Config.Timeout
		defer cancel()
		a.inserted, a.err = s.inboxEnqueue(ctx, ingestRow(id))
	}()
}

func receiveAnswer(t *testing.T, ch <-chan ingestAnswer) ingestAnswer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(10 * time.Second):
		require.FailNow(t, "a delivery of the batch is still waiting for its answer")
		return ingestAnswer{}
	}
}

// requirePanicAnswered requires a: the error of a shared insert in which
// the store's connections' code (a tracer) panicked, as a PanicError
// naming it, and no panic reaching the delivery.
func requirePanicAnswered(t *testing.T, a ingestAnswer) {
	t.Helper()
	require.Nil(t, a.panicked, a.id)
	require.False(t, a.inserted, a.id)
	p, ok := errors.AsType[*PanicError](a.err)
	require.True(t, ok, "%s: %v", a.id, a.err)
	require.Equal(t, "tracer: boom", p.Value)
	require.NotEmpty(t, p.Stack)
	require.EqualError(t, a.err, "idempotency: inbox enqueue: the store's connections panicked "+
		"(a pgx tracer, a pool's hook or the PgxBeginner): tracer: boom", a.id)
}

// A panic in a user's pgx tracer during the insert that a delivery sends
// for the deliveries batched with it answers each of them with the
// PanicError (503, nothing stored), not the sender's delivery alone,
// leaving the others to wait for their Config.Timeout; and it gives the
// sender's place back, so that later deliveries are stored, and the
// insert's connection to the pool.
func TestPgxIngestPanicInTheSharedInsertAnswersTheBatch(t *testing.T) {
	t.Parallel()
	tr := &ingestTracer{}
	s, db := newTracedIngestStore(t, tr)
	g := &s.ingest
	answers := queueBehindBusySenders(t, s, "evt_waiting", 3)

	tr.panics.Store(true)
	g.mu.Lock()
	g.senders = ingestSenders - 1 // a place frees up: the next delivery sends them all with it
	g.mu.Unlock()
	enqueueAsync(s, "evt_sender", answers)
	for range 4 {
		requirePanicAnswered(t, receiveAnswer(t, answers))
	}
	require.Zero(t, db.Pool.Stat().AcquiredConns(), "the insert's connection is given back to the pool")

	g.mu.Lock()
	require.Equal(t, ingestSenders-1, g.senders, "the sender's place is given back")
	g.senders = 0
	g.mu.Unlock()
	tr.panics.Store(false)
	ok, err := s.inboxEnqueue(t.Context(), ingestRow("evt_later"))
	require.NoError(t, err)
	require.True(t, ok)
}

// The same panic in an insert a sender's goroutine sends (the deliveries
// that arrived while the delivery that became the sender waited for its
// own insert) answers its batch and leaves the process running; the
// goroutine gives its place back.
func TestPgxIngestPanicInTheSendersGoroutineAnswersTheBatch(t *testing.T) {
	t.Parallel()
	tr := &ingestTracer{hold: make(chan struct{}), held: make(chan struct{})}
	s, _ := newTracedIngestStore(t, tr)
	g := &s.ingest
	first := make(chan ingestAnswer, 1)
	enqueueAsync(s, "evt_first", first)
	<-tr.held // its insert is in flight: the next deliveries wait behind it
	answers := queueBehindBusySenders(t, s, "evt_behind", 2)

	tr.panics.Store(true)
	close(tr.hold)
	a := receiveAnswer(t, first)
	require.NoError(t, a.err)
	require.True(t, a.inserted)
	for range 2 {
		requirePanicAnswered(t, receiveAnswer(t, answers))
	}
	waitIngest(t, g, func() bool { return g.senders == ingestSenders-1 }) // the first delivery's goroutine left
}
