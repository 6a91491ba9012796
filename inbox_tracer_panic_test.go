package idempotency_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// panickingTracer is a user's pgx tracer (an OpenTelemetry one traces
// statements and batches alike) that panics once, on the first statement
// whose SQL holds every part of on, as it starts; panicked then closes.
// With again set, it panics once more, "tracer: boom again", on the first
// statement after that one whose SQL holds every part of again. With
// atBatchStart set, it panics as a batch that holds such a statement
// starts, before the batch is sent.
type panickingTracer struct {
	on           []string
	armed        atomic.Bool
	panicked     chan struct{}
	again        []string
	rearmed      atomic.Bool
	atBatchStart bool
}

func newPanickingTracer(on ...string) *panickingTracer {
	return &panickingTracer{on: on, panicked: make(chan struct{})}
}

func (tr *panickingTracer) trace(sql string) {
	if holdsEvery(sql, tr.again) && tr.rearmed.CompareAndSwap(true, false) {
		panic("tracer: boom again")
	}
	if holdsEvery(sql, tr.on) && tr.armed.CompareAndSwap(true, false) {
		tr.rearmed.Store(len(tr.again) > 0)
		close(tr.panicked)
		panic("tracer: boom")
	}
}

// holdsEvery reports whether sql holds every one of parts.
func holdsEvery(sql string, parts []string) bool {
	for _, part := range parts {
		if !strings.Contains(sql, part) {
			return false
		}
	}
	return true
}

func (tr *panickingTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	tr.trace(d.SQL)
	return ctx
}

func (tr *panickingTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (tr *panickingTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	if tr.atBatchStart {
		for _, q := range d.Batch.QueuedQueries {
			tr.trace(q.SQL)
		}
	}
	return ctx
}

func (tr *panickingTracer) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	if !tr.atBatchStart {
		tr.trace(d.SQL)
	}
}

func (tr *panickingTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// tracedInbox is a pgInbox on a pool whose connections trace with tr.
func tracedInbox(t *testing.T, tr *panickingTracer) *pgInbox {
	t.Helper()
	db := pgtest.NewWithConfig(t, func(c *pgxpool.Config) { c.ConnConfig.Tracer = tr })
	b := newPgBackendIn(t, db, idempotency.PgxConfig{}, func(p *pgxpool.Pool) idempotency.PgxBeginner { return p })
	return newPgInbox(t, b, idempotency.InboxConfig{PollOnly: true, Backoff: func(int) time.Duration { return time.Minute }})
}

// panicInWorkDue arms tr and runs WorkDue, which attempts on the
// caller's goroutine as a worker of Run does on its own; it requires that
// no panic went up it (it recovers one rather than end the test binary)
// and that every connection went back to the pool, or was closed (a pool
// closes one given back in the middle of a statement on a goroutine of
// its own), and returns WorkDue's answer.
func panicInWorkDue(t *testing.T, p *pgInbox, tr *panickingTracer) (n int, err error) {
	t.Helper()
	tr.armed.Store(true)
	var panicked any
	func() {
		defer func() { panicked = recover() }()
		n, err = p.inbox.WorkDue(t.Context())
	}()
	require.Nil(t, panicked, "the panic went up the goroutine")
	recv(t, tr.panicked, "the tracer's panic")
	require.Eventually(t, func() bool { return p.b.db.Pool.Stat().AcquiredConns() == 0 }, 10*time.Second, time.Millisecond,
		"the connection is given back to the pool")
	return n, err
}

// requireAppliedOnceLater advances p's clock by d and works what is due:
// eventID, about invoice, is then applied, once.
func requireAppliedOnceLater(t *testing.T, p *pgInbox, d time.Duration, eventID, invoice string) {
	t.Helper()
	p.clock.Advance(d)
	_, err := p.inbox.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, p.b.get(t, invoice))
	require.Equal(t, idempotency.InboxProcessed, p.record(t, eventID).State)
}

// requireConnsPanic requires err to be the PanicError of the tracer's
// panic, naming the store's connections.
func requireConnsPanic(t *testing.T, err error) {
	t.Helper()
	p, ok := errors.AsType[*idempotency.PanicError](err)
	require.True(t, ok, "%v", err)
	require.Equal(t, "tracer: boom", p.Value)
	require.NotEmpty(t, p.Stack)
	require.ErrorContains(t, err, "the store's connections panicked (a pgx tracer, a pool's hook or the PgxBeginner): tracer: boom")
}

// A panic in a user's pgx tracer during the lease is the lease's error: it
// does not go up Run's loop (or WorkDue), the lease's connection goes
// back to the pool, and the event is applied once, at a later lease.
func TestPgxInboxTracerPanicInTheLeaseIsItsError(t *testing.T) {
	t.Parallel()
	requireLeasePanicIsItsError(t, false, "evt_lease_panic", "in_lease_panic")
}

// requireLeasePanicIsItsError holds that a tracer's panic in the lease
// (as its batch starts, with atBatchStart) is the lease's error, its
// connection given back, and that eventID, about invoice, is applied
// once later.
func requireLeasePanicIsItsError(t *testing.T, atBatchStart bool, eventID, invoice string) {
	t.Helper()
	tr := newPanickingTracer("WITH expired AS")
	tr.atBatchStart = atBatchStart
	p := tracedInbox(t, tr)
	p.deliver(t, eventID, invoice, 0)

	n, err := panicInWorkDue(t, p, tr)
	require.Zero(t, n)
	requireConnsPanic(t, err)
	require.ErrorContains(t, err, "inbox lease: ")
	// The batch that panicked may have committed the lease: the event
	// is then taken over once that lease expires.
	requireAppliedOnceLater(t, p, idempotency.DefaultLease, eventID, invoice)
}

// A panic in a user's pgx tracer during an attempt's claim fails the
// attempt with it: rolled back, recorded failed and retried after the
// backoff, reported, and its connection given back to the pool, where it
// went up the worker's goroutine and ended the process, the claim's
// transaction left open on a connection the pool lost.
func TestPgxInboxTracerPanicInTheClaimFailsTheAttempt(t *testing.T) {
	t.Parallel()
	requireClaimPanicFailsTheAttempt(t, false, "evt_claim_panic", "in_claim_panic")
}

// requireClaimPanicFailsTheAttempt holds that a tracer's panic in an
// attempt's claim (as its batch starts, with atBatchStart) fails the
// attempt, rolled back and reported, its connection given back, and
// that eventID, about invoice, is applied once after the backoff.
func requireClaimPanicFailsTheAttempt(t *testing.T, atBatchStart bool, eventID, invoice string) {
	t.Helper()
	tr := newPanickingTracer("UPDATE", "idempotency_inbox", "finished_at = $4")
	tr.atBatchStart = atBatchStart
	p := tracedInbox(t, tr)
	p.deliver(t, eventID, invoice, 0)

	n, err := panicInWorkDue(t, p, tr)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	res := p.lastResult(t)
	require.Equal(t, idempotency.OutcomeFailed, res.Outcome)
	require.Equal(t, idempotency.InboxFailed, res.State)
	requireConnsPanic(t, res.Err)
	rec := p.record(t, eventID)
	require.Equal(t, idempotency.InboxFailed, rec.State)
	require.Contains(t, rec.LastError, "the store's connections panicked")
	require.Zero(t, p.b.get(t, invoice), "rolled back")
	requireAppliedOnceLater(t, p, time.Minute, eventID, invoice) // the backoff
}

// A panic in a user's pgx tracer as a failed attempt is recorded is the
// record's error: logged as a settle that failed, the event taken over
// when its lease expires, and applied once then.
func TestPgxInboxTracerPanicInTheSettleIsItsError(t *testing.T) {
	t.Parallel()
	tr := newPanickingTracer("UPDATE", "idempotency_inbox", "attempt = CASE WHEN $9")
	p := tracedInbox(t, tr)
	var failed atomic.Bool
	p.fail = func(string) error {
		if failed.CompareAndSwap(false, true) {
			return errors.New("downstream unavailable")
		}
		return nil
	}
	p.deliver(t, "evt_settle_panic", "in_settle_panic", 0)

	n, err := panicInWorkDue(t, p, tr)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	res := p.lastResult(t)
	require.Equal(t, idempotency.OutcomeFailed, res.Outcome)
	require.ErrorIs(t, res.Err, idempotency.ErrLeaseExpired, "left to the lease that takes it over")
	require.Equal(t, idempotency.InboxProcessing, p.record(t, "evt_settle_panic").State)
	requireAppliedOnceLater(t, p, idempotency.DefaultLease, "evt_settle_panic", "in_settle_panic")
}
