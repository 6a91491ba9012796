package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// A worker's commit begins its next event's transaction in the same round
// trip (COMMIT AND CHAIN). Each event keeps a transaction of its own: what
// one event's commit or handler does to the chain never changes what
// another event's transaction keeps.

// chainInbox is a pgInbox with n events delivered and leased, evt_chain_1
// about in_chain_1 and so on, in that order.
func chainInbox(t *testing.T, n int) (*pgBackend, *pgInbox, []idempotency.InboxLeased) {
	t.Helper()
	b := newPgBackend(t, idempotency.PgxConfig{})
	p := newPgInbox(t, b, idempotency.InboxConfig{Lease: time.Minute, Timeout: 10 * time.Second})
	for i := 1; i <= n; i++ {
		p.deliver(t, fmt.Sprintf("evt_chain_%d", i), fmt.Sprintf("in_chain_%d", i), int64(i))
	}
	return b, p, p.lease(t, n)
}

// requireChainResults checks each event's counter, inbox state and
// result, in order: want[i] is evt_chain_{i+1}'s count of applications.
func requireChainResults(t *testing.T, b *pgBackend, p *pgInbox, want []int, states []idempotency.InboxState) {
	t.Helper()
	for i := range want {
		id := fmt.Sprintf("evt_chain_%d", i+1)
		require.Equal(t, want[i], b.get(t, fmt.Sprintf("in_chain_%d", i+1)), "%s applied", id)
		require.Equal(t, states[i], p.record(t, id).State, id)
		_, claimed, err := b.store.LookupEvent(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, want[i] == 1, claimed, "%s claimed with its writes", id)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	require.Len(t, p.results, len(want), "one result per attempt")
	for i, r := range p.results {
		require.Equal(t, fmt.Sprintf("evt_chain_%d", i+1), r.EventID, "results in order")
		require.Equal(t, states[i], r.State, r.EventID)
	}
}

func TestPgxInboxChainedCommits(t *testing.T) {
	t.Parallel()
	processed, failed := idempotency.InboxProcessed, idempotency.InboxFailed

	t.Run("each commit begins the next event", func(t *testing.T) {
		t.Parallel()
		b, p, leased := chainInbox(t, 5)
		require.Equal(t, 4, idempotency.ApplyChained(t.Context(), p.inbox, leased...))
		requireChainResults(t, b, p, []int{1, 1, 1, 1, 1}, []idempotency.InboxState{processed, processed, processed, processed, processed})
	})

	t.Run("a commit that fails keeps nothing and the next event begins alone", func(t *testing.T) {
		t.Parallel()
		b, p, leased := chainInbox(t, 3)
		// A deferred constraint fails evt_chain_2 at its commit, the one
		// that would begin evt_chain_3.
		_, err := b.db.Pool.Exec(t.Context(), `CREATE TABLE deferred_once (v int, CONSTRAINT deferred_once_v UNIQUE (v) DEFERRABLE INITIALLY DEFERRED)`)
		require.NoError(t, err)
		p.write = func(ctx context.Context, tx idempotency.Tx, eventID string) error {
			if eventID != "evt_chain_2" {
				return nil
			}
			_, err := idempotency.PgxTx(tx).Exec(ctx, `INSERT INTO deferred_once VALUES (1), (1)`)
			return err
		}
		require.Equal(t, 1, idempotency.ApplyChained(t.Context(), p.inbox, leased...), "only evt_chain_1's commit began the next")
		requireChainResults(t, b, p, []int{1, 0, 1}, []idempotency.InboxState{processed, failed, processed})
		require.ErrorContains(t, p.results[1].Err, "deferred_once_v")
		require.Contains(t, p.record(t, "evt_chain_2").LastError, "commit")
	})

	t.Run("a handler that swallows a failed statement: it fails before its commit and the next event begins alone", func(t *testing.T) {
		t.Parallel()
		b, p, leased := chainInbox(t, 3)
		p.write = func(ctx context.Context, tx idempotency.Tx, eventID string) error {
			if eventID == "evt_chain_2" {
				// The error is dropped: PostgreSQL aborted the transaction,
				// and would answer its COMMIT AND CHAIN with ROLLBACK.
				_, _ = idempotency.PgxTx(tx).Exec(ctx, `SELECT 1/0`)
			}
			return nil
		}
		require.Equal(t, 1, idempotency.ApplyChained(t.Context(), p.inbox, leased...), "only evt_chain_1's commit began the next")
		requireChainResults(t, b, p, []int{1, 0, 1}, []idempotency.InboxState{processed, failed, processed})
		require.Contains(t, p.record(t, "evt_chain_2").LastError, "the handler returned nil after a statement of its transaction failed")
	})

	t.Run("a handler that fails after its transaction was begun by the commit before", func(t *testing.T) {
		t.Parallel()
		b, p, leased := chainInbox(t, 3)
		p.fail = func(eventID string) error {
			if eventID == "evt_chain_2" {
				return errors.New("downstream refused")
			}
			return nil
		}
		require.Equal(t, 1, idempotency.ApplyChained(t.Context(), p.inbox, leased...))
		requireChainResults(t, b, p, []int{1, 0, 1}, []idempotency.InboxState{processed, failed, processed})
	})

	t.Run("an event claimed elsewhere is not begun", func(t *testing.T) {
		t.Parallel()
		b, p, leased := chainInbox(t, 3)
		// The synchronous Handler of another replica applied evt_chain_2.
		_, err := b.store.Run(t.Context(), idempotency.Claim{EventID: "evt_chain_2", EventType: "invoice.paid"},
			func(ctx context.Context, tx idempotency.Tx) error { return b.add(ctx, tx, "in_chain_2", 1) })
		require.NoError(t, err)
		// evt_chain_1's commit found evt_chain_2 claimed and began
		// nothing; evt_chain_2, a duplicate, committed nothing.
		require.Equal(t, 0, idempotency.ApplyChained(t.Context(), p.inbox, leased...))
		requireChainResults(t, b, p, []int{1, 1, 1}, []idempotency.InboxState{processed, processed, processed})
		require.Equal(t, idempotency.OutcomeDuplicate, p.results[1].Outcome)
	})

	t.Run("an AfterCommit func keeps its commit from beginning the next event", func(t *testing.T) {
		t.Parallel()
		b, p, leased := chainInbox(t, 3)
		ran := make(chan string, 3)
		p.write = func(ctx context.Context, tx idempotency.Tx, eventID string) error {
			if eventID == "evt_chain_1" {
				tx.AfterCommit(func(context.Context) { ran <- eventID })
			}
			return nil
		}
		require.Equal(t, 1, idempotency.ApplyChained(t.Context(), p.inbox, leased...), "only evt_chain_2's commit began the next")
		require.Equal(t, "evt_chain_1", recv(t, ran, "the AfterCommit func"))
		requireChainResults(t, b, p, []int{1, 1, 1}, []idempotency.InboxState{processed, processed, processed})
	})

	t.Run("the handler's pgx transaction refuses SQL once its event is committed", func(t *testing.T) {
		t.Parallel()
		b, p, leased := chainInbox(t, 2)
		var kept pgx.Tx
		p.write = func(ctx context.Context, tx idempotency.Tx, eventID string) error {
			if eventID == "evt_chain_1" {
				kept = idempotency.PgxTx(tx)
			}
			return nil
		}
		require.Equal(t, 1, idempotency.ApplyChained(t.Context(), p.inbox, leased...))
		_, err := kept.Exec(t.Context(), `INSERT INTO counters (name, value) VALUES ('kept', 1)`)
		require.ErrorIs(t, err, idempotency.ErrTxDone)
		require.ErrorIs(t, kept.QueryRow(t.Context(), `SELECT 1`).Scan(new(int)), idempotency.ErrTxDone)
		require.ErrorIs(t, kept.SendBatch(t.Context(), &pgx.Batch{}).Close(), idempotency.ErrTxDone)
		require.Equal(t, 0, b.get(t, "kept"))
		requireChainResults(t, b, p, []int{1, 1}, []idempotency.InboxState{processed, processed})
	})

	t.Run("an event with nothing queued after it commits alone", func(t *testing.T) {
		t.Parallel()
		b, p, leased := chainInbox(t, 2)
		require.Equal(t, 0, idempotency.ApplyChained(t.Context(), p.inbox, leased[0]))
		require.Equal(t, 0, idempotency.ApplyChained(t.Context(), p.inbox, leased[1]))
		requireChainResults(t, b, p, []int{1, 1}, []idempotency.InboxState{processed, processed})
	})
}

// TestPgxInboxChainedTransactionSessionEnds: the session of a worker ends
// between two of its events (an operator's pg_terminate_backend, a
// failover, idle_in_transaction_session_timeout), after the first event's
// commit began the next one's transaction on it. The next event is then
// claimed again on another connection, as it is when the pool hands out a
// connection that went stale: it is applied in its first attempt, rather
// than failed, counted and retried after a backoff for a session it never
// got to use.
func TestPgxInboxChainedTransactionSessionEnds(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	p := newPgInbox(t, b, idempotency.InboxConfig{Lease: time.Minute, Timeout: 10 * time.Second})
	var pid uint32 // evt_chain_1's session, which its commit left in evt_chain_2's transaction
	p.write = func(ctx context.Context, tx idempotency.Tx, eventID string) error {
		if eventID == "evt_chain_1" {
			pid = idempotency.PgxTx(tx).Conn().PgConn().PID()
		}
		return nil
	}
	applyChainedSessionEnds(t, b, p, &pid)
}

// applyChainedSessionEnds delivers evt_chain_1 and evt_chain_2 to p, with
// a new inbox on p.hs, and applies them with one worker's chained commit,
// ending the session *pid (evt_chain_1's, which p's handlers record) once
// that commit began evt_chain_2's transaction on it. It checks that
// evt_chain_2 was claimed again on another connection and applied in its
// first attempt.
func applyChainedSessionEnds(t *testing.T, b *pgBackend, p *pgInbox, pid *uint32) {
	t.Helper()
	admin := pgtest.AdminPool(t)
	p.onResult = func(r idempotency.Result) {
		if r.EventID != "evt_chain_1" {
			return
		}
		// On the worker's goroutine, before it takes evt_chain_2: the
		// session ends while that event's transaction waits idle on it.
		var ended bool
		require.NoError(t, admin.QueryRow(t.Context(), `SELECT pg_terminate_backend($1, 10000)`, int64(*pid)).Scan(&ended))
		require.True(t, ended, "session %d ended", *pid)
	}
	p.inbox = p.newInbox(t, b.store)
	h, err := p.inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	p.h = h
	for i := 1; i <= 2; i++ {
		p.deliver(t, fmt.Sprintf("evt_chain_%d", i), fmt.Sprintf("in_chain_%d", i), int64(i))
	}
	leased := p.lease(t, 2)
	require.Equal(t, 1, idempotency.ApplyChained(t.Context(), p.inbox, leased...), "evt_chain_1's commit began evt_chain_2")
	require.Len(t, p.results, 2)
	require.NoError(t, p.results[1].Err, "evt_chain_2's attempt: its session ended before the attempt used it")
	requireChainResults(t, b, p, []int{1, 1}, []idempotency.InboxState{idempotency.InboxProcessed, idempotency.InboxProcessed})
	require.Equal(t, 1, p.record(t, "evt_chain_2").Attempt, "applied in its first attempt")
}

// TestPgxInboxChainedSessionEndsInsideAttempt: a session that ends once
// the attempt has used its chained transaction fails the attempt, as it
// does unchained: the handler is not run again within it.
func TestPgxInboxChainedSessionEndsInsideAttempt(t *testing.T) {
	t.Parallel()
	b, p, leased := chainInbox(t, 2)
	admin := pgtest.AdminPool(t)
	runs := 0
	p.write = func(ctx context.Context, tx idempotency.Tx, eventID string) error {
		if eventID != "evt_chain_2" {
			return nil
		}
		runs++
		// The handler's first statement went through on the session the
		// chained commit left it; then the session ends.
		q := idempotency.PgxTx(tx)
		var ended bool
		require.NoError(t, admin.QueryRow(ctx, `SELECT pg_terminate_backend($1, 10000)`, int64(q.Conn().PgConn().PID())).Scan(&ended))
		require.True(t, ended)
		_, err := q.Exec(ctx, `SELECT 1`)
		return err
	}
	require.Equal(t, 1, idempotency.ApplyChained(t.Context(), p.inbox, leased...))
	requireChainResults(t, b, p, []int{1, 0}, []idempotency.InboxState{idempotency.InboxProcessed, idempotency.InboxFailed})
	require.Equal(t, 1, runs, "the handler ran once")
	require.Equal(t, 1, p.record(t, "evt_chain_2").Attempt)
}

// TestPgxInboxChainedCommitNotHeldByNextClaim: a chained commit carries
// the next event's claim, which may have to wait for a lock (that event
// being claimed by another transaction, a guard key it claims early held
// by another). The event that committed is reported processed at once,
// not held behind that wait until its attempt times out and then
// reported failed although it committed.
func TestPgxInboxChainedCommitNotHeldByNextClaim(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	// evt_chain_1's attempt commits under Timeout, which a loaded machine's
	// statements must not outlast (2 s they did); held behind the next
	// claim, it would be reported failed at Timeout.
	p := newPgInbox(t, b, idempotency.InboxConfig{Lease: time.Minute, Timeout: 10 * time.Second})
	// Another transaction holds evt_chain_2's claim, uncommitted, until
	// evt_chain_1's attempt is reported; then it rolls back.
	entered, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		_, err := b.store.Run(context.Background(), idempotency.Claim{EventID: "evt_chain_2", EventType: "invoice.paid"},
			func(ctx context.Context, tx idempotency.Tx) error {
				close(entered)
				<-release
				return errors.New("rolled back")
			})
		held <- err
	}()
	recv(t, entered, "the other transaction's claim")
	var once sync.Once
	p.onResult = func(r idempotency.Result) {
		once.Do(func() { close(release) })
	}
	p.inbox = p.newInbox(t, b.store)
	for i := 1; i <= 2; i++ {
		p.deliver(t, fmt.Sprintf("evt_chain_%d", i), fmt.Sprintf("in_chain_%d", i), int64(i))
	}
	leased := p.lease(t, 2)
	idempotency.ApplyChained(t.Context(), p.inbox, leased...)
	require.ErrorContains(t, recv(t, held, "the other transaction's end"), "rolled back")
	first := p.results[0]
	require.Equal(t, "evt_chain_1", first.EventID)
	require.NoError(t, first.Err, "evt_chain_1 committed")
	require.Equal(t, idempotency.OutcomeProcessed, first.Outcome)
	requireChainResults(t, b, p, []int{1, 1}, []idempotency.InboxState{idempotency.InboxProcessed, idempotency.InboxProcessed})
}

// An OnResult that queries the store's pool does not wait for ever. With
// chained commits, each worker would hold a connection for its next event
// while OnResult runs: with pgxpool's default of 4 connections (on this
// machine) and 8 workers, every connection was so held and every OnResult
// waited for one.
func TestPgxInboxOnResultMayQueryThePool(t *testing.T) {
	t.Parallel()
	db := pgtest.NewWithConfig(t, func(c *pgxpool.Config) { c.MaxConns = 4 })
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(t.Context()))
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		_, err := idempotency.PgxTx(tx).Exec(ctx, `SELECT 1`)
		return err
	})
	const events = 20
	results := make(chan idempotency.Result, events)
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Workers: 8, IngestWorkers: 8, Logger: discardLogger(),
		OnResult: func(r idempotency.Result) {
			var one int
			assert.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT 1`).Scan(&one))
			results <- r
		}})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	for i := range events {
		a := idempotencytest.Deliver(h, invoicePayload(t, fmt.Sprintf("evt_or_%d", i), fmt.Sprintf("in_or_%d", i), "acct_1"), testSecret)
		require.Equal(t, idempotency.OutcomeQueued, a.Outcome)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	for range events {
		r := recv(t, results, "an attempt's OnResult")
		require.NoError(t, r.Err)
	}
	cancel()
	require.NoError(t, recv(t, done, "Run"))
}
