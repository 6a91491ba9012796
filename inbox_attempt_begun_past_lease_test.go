package idempotency_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestInboxAttemptBegunPastItsLeaseKeepsOrder: a worker delayed past its
// lease's end before its attempt begins (a slow Observer, a full pool)
// finds its lease lost, although no lease took its event over: by then a
// lease elsewhere has counted its worker dead and taken the earlier event
// of its object, which the late attempt would otherwise run beside, and
// could commit before. The late event is leased again once the earlier
// one is applied, and applied after it.
func TestInboxAttemptBegunPastItsLeaseKeepsOrder(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l := newLateStart(t)
			in := l.inbox(store)
			l.deliver(in, lateSecond, memCreated+1)
			late := l.lease(in, lateSecond, 1)   // its worker is delayed
			l.deliver(in, lateFirst, memCreated) // Stripe sent it late
			none, err := idempotency.LeaseInbox(t.Context(), in, 2)
			require.NoError(t, err)
			require.Empty(t, none, "the first event waits while the second one's lease runs")

			l.clock.Advance(time.Minute) // the second one's lease ends, its attempt not begun
			first := l.lease(in, lateFirst, 1)
			idempotency.ApplyLeased(t.Context(), in, late)
			l.requireLateAttemptLost(in)
			l.applyInOrder(in, first)
		})
	}
}

// TestPgxInboxAttemptBegunAfterAPoolWaitPastItsLease: the lease's end is
// checked at the time the attempt's transaction begins, after the wait
// for a connection of a full pool, not when the worker built its claim:
// a replica whose only connection is held leases the later event of an
// object and waits for a connection past that lease's end, while another
// replica takes the earlier event; the late attempt runs nothing.
func TestPgxInboxAttemptBegunAfterAPoolWaitPastItsLease(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := t.Context()
	var armed atomic.Bool
	waiting := make(chan struct{})
	poolCfg, err := pgxpool.ParseConfig(db.URL)
	require.NoError(t, err)
	poolCfg.MaxConns = 1
	poolCfg.ConnConfig.Tracer = &acquireStarts{armed: &armed, started: waiting}
	onePool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	require.NoError(t, err)
	t.Cleanup(onePool.Close)
	other, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, other.Migrate(ctx))
	full, err := idempotency.NewPgxStore(onePool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)

	l := newLateStart(t)
	a, b := l.inbox(full), l.inbox(other)
	l.deliver(b, lateSecond, memCreated+1)
	late := l.lease(a, lateSecond, 1)
	l.deliver(b, lateFirst, memCreated)
	held, err := onePool.Acquire(ctx)
	require.NoError(t, err)
	armed.Store(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		idempotency.ApplyLeased(ctx, a, late)
	}()
	recv(t, waiting, "the late attempt waiting for a connection")
	l.clock.Advance(time.Minute) // meanwhile, its lease ends
	first := l.lease(b, lateFirst, 1)
	held.Release()
	recv(t, done, "the late attempt")
	l.requireLateAttemptLost(b)
	l.applyInOrder(b, first)
}

const (
	lateFirst  = "evt_late_start_first"
	lateSecond = "evt_late_start_second"
)

// lateStart is a rig of inboxes on one fake clock whose invoice.paid
// handler records the events it applies, in order, and whose attempts'
// ends, as their workers give them, it keeps.
type lateStart struct {
	t       *testing.T
	clock   *idempotencytest.Clock
	hs      *idempotency.Handlers
	mu      sync.Mutex
	applied []string
	ends    []idempotency.Result
}

func newLateStart(t *testing.T) *lateStart {
	l := &lateStart{t: t, clock: idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)), hs: idempotency.NewHandlers()}
	idempotency.On(l.hs, "invoice.paid", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.applied = append(l.applied, ev.ID)
		return nil
	})
	return l
}

// inbox is an inbox of the rig on store: a lease of a minute, attempts of
// 10 s at most.
func (l *lateStart) inbox(store idempotency.Store) *idempotency.Inbox {
	cfg := idempotency.InboxConfig{Now: l.clock.Now, Lease: time.Minute, Timeout: 10 * time.Second, Logger: discardLogger()}
	observeResults(&cfg, func(r idempotency.Result) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.ends = append(l.ends, r)
	})
	in, err := idempotency.NewInbox(store, l.hs, cfg)
	require.NoError(l.t, err)
	return in
}

// deliver stores event eventID, about the rig's one invoice, created at
// the given second, through in's Handler.
func (l *lateStart) deliver(in *idempotency.Inbox, eventID string, created int64) {
	l.t.Helper()
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(l.t, err)
	a := idempotencytest.Deliver(h, memInboxPayload(l.t, eventID, "in_late_start", created), testSecret)
	require.Equal(l.t, idempotency.OutcomeQueued, a.Outcome)
}

// lease leases from in and requires event want, alone, at attempt.
func (l *lateStart) lease(in *idempotency.Inbox, want string, attempt int) idempotency.InboxLeased {
	l.t.Helper()
	ls, err := idempotency.LeaseInbox(l.t.Context(), in, 2)
	require.NoError(l.t, err)
	require.Len(l.t, ls, 1)
	require.Equal(l.t, want, ls[0].EventID())
	require.Equal(l.t, attempt, ls[0].Attempt())
	return ls[0]
}

// requireLateAttemptLost requires the later event's attempt to have run
// nothing, its lease lost, its end not recorded: the event is left to its
// expired lease, for the lease that takes it over to report.
func (l *lateStart) requireLateAttemptLost(in *idempotency.Inbox) {
	l.t.Helper()
	l.mu.Lock()
	require.Empty(l.t, l.applied, "an attempt begun past its lease runs nothing")
	require.Len(l.t, l.ends, 1)
	require.ErrorIs(l.t, l.ends[0].Err, idempotency.ErrLeaseLost)
	require.ErrorIs(l.t, l.ends[0].Err, idempotency.ErrLeaseExpired, "the lease that takes it over reports it")
	require.Empty(l.t, l.ends[0].State, "its end is not recorded")
	l.mu.Unlock()
	r, _, err := in.Lookup(l.t.Context(), lateSecond)
	require.NoError(l.t, err)
	require.Equal(l.t, idempotency.InboxProcessing, r.State, "left to its expired lease")
	require.Equal(l.t, 1, r.Attempt)
}

// applyInOrder applies first, leased, then the later event, leased again
// after it at attempt 2, and requires both applied once, in that order.
func (l *lateStart) applyInOrder(in *idempotency.Inbox, first idempotency.InboxLeased) {
	l.t.Helper()
	ctx := l.t.Context()
	idempotency.ApplyLeased(ctx, in, first)
	idempotency.ApplyLeased(ctx, in, l.lease(in, lateSecond, 2))
	l.mu.Lock()
	require.Equal(l.t, []string{lateFirst, lateSecond}, l.applied)
	l.mu.Unlock()
	for _, id := range []string{lateFirst, lateSecond} {
		r, _, err := in.Lookup(ctx, id)
		require.NoError(l.t, err)
		require.Equal(l.t, idempotency.InboxProcessed, r.State, id)
	}
}

// acquireStarts is a pgx tracer that closes started at the first wait for
// a connection of its pool once armed.
type acquireStarts struct {
	armed   *atomic.Bool
	started chan struct{}
	once    sync.Once
}

func (a *acquireStarts) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	if a.armed.Load() {
		a.once.Do(func() { close(a.started) })
	}
	return ctx
}

func (a *acquireStarts) TraceAcquireEnd(context.Context, *pgxpool.Pool, pgxpool.TraceAcquireEndData) {
}

func (a *acquireStarts) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (a *acquireStarts) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
