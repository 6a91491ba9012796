package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// heldCommits is a PgxBeginner whose next transaction, once armed, says
// on entered that its commit was called and commits when release closes:
// a lease's transaction held open after its statements.
type heldCommits struct {
	pool             *pgxpool.Pool
	armed            chan struct{} // holds one token while armed
	entered, release chan struct{}
}

func (g *heldCommits) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	tx, err := g.pool.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	select {
	case <-g.armed:
		return heldCommitTx{tx, g}, nil
	default:
		return tx, nil
	}
}

type heldCommitTx struct {
	pgx.Tx
	g *heldCommits
}

func (tx heldCommitTx) Commit(ctx context.Context) error {
	close(tx.g.entered)
	<-tx.g.release
	return tx.Tx.Commit(ctx)
}

// leaseResult is what a lease of leaseAsync returned.
type leaseResult struct {
	ids []string
	err error
}

// leaseAsync leases up to 10 events of in on a goroutine of its own.
func leaseAsync(in *idempotency.Inbox) <-chan leaseResult {
	out := make(chan leaseResult, 1)
	go func() {
		leased, err := idempotency.LeaseInbox(context.Background(), in, 10)
		var ids []string
		for _, l := range leased {
			ids = append(ids, l.EventID())
		}
		out <- leaseResult{ids, err}
	}()
	return out
}

// answeredOrWaiting waits until the lease of leaseAsync answers, and
// returns its answer, or until a session of b's schema waits on a lock
// (answered false).
func answeredOrWaiting(t *testing.T, b *pgBackend, lease <-chan leaseResult) (res leaseResult, answered bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		select {
		case res = <-lease:
			answered = true
			return true
		default:
		}
		n, err := pgtest.LockWaiters(t, b.db.Schema)
		require.NoError(t, err)
		return n > 0
	}, 10*time.Second, time.Millisecond, "the lease neither answered nor waited on a lock")
	return res, answered
}

// TestPgxInboxLeasesOfOneObjectAreSerialised: two leases of two processes
// never take two events of one object, even when an earlier event of the
// object arrives while the first lease's transaction, which took the later
// one, has not committed yet: the second lease waits for the first (the
// schema's lease lock), then finds the object held. Without that wait its
// statement's snapshot shows the later event still pending, not applying,
// and the earlier one the first of its object. (No test failed when
// PgxStore's lease ran without its lock.)
func TestPgxInboxLeasesOfOneObjectAreSerialised(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	p := newPgInbox(t, b, idempotency.InboxConfig{Lease: time.Minute, Timeout: 10 * time.Second})
	cfg, err := pgxpool.ParseConfig(b.db.URL)
	require.NoError(t, err)
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	gate := &heldCommits{pool: pool, armed: make(chan struct{}, 1), entered: make(chan struct{}), release: make(chan struct{})}
	heldStore, err := idempotency.NewPgxStore(gate, idempotency.PgxConfig{Schema: b.db.Schema})
	require.NoError(t, err)
	first := p.newInbox(t, heldStore)

	p.deliver(t, "evt_serial_2", "in_serial", 2)
	gate.armed <- struct{}{}
	firstDone := leaseAsync(first)
	<-gate.entered // the first lease took evt_serial_2; its transaction is open
	released := false
	defer func() {
		if !released {
			close(gate.release)
			<-firstDone
		}
	}()

	p.deliver(t, "evt_serial_1", "in_serial", 1) // created earlier, arrived late
	secondDone := leaseAsync(p.inbox)
	second, answered := answeredOrWaiting(t, b, secondDone)
	require.False(t, answered, "the second lease answered %v while the first one's transaction was open", second.ids)

	released = true
	close(gate.release)
	got := <-firstDone
	require.NoError(t, got.err)
	require.Equal(t, []string{"evt_serial_2"}, got.ids)
	second = <-secondDone
	require.NoError(t, second.err)
	require.Empty(t, second.ids, "evt_serial_1 waits while evt_serial_2 of its object is applied")
	require.Equal(t, idempotency.InboxPending, p.record(t, "evt_serial_1").State)
}
