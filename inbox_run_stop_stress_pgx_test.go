package idempotency_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// Run stopped while its workers chain commits: once it returns, no event
// is left processing (those leased ahead and not started are pending
// again, their attempt not counted), and a second Run applies every event
// exactly once, each object's in (created, id) order.
//
// The order is the order in which the handlers' transactions committed:
// each handler writes its event into applied_order, in its transaction,
// numbered by a sequence. An object's next event is not leased before the
// transaction of the one before it committed, so its number is greater.
// (The order of the attempts' results is not that order: a worker reports
// its event after the commit, and another worker may apply the object's
// next event and report it first.)
func TestPgxInboxRunStopWhileChaining(t *testing.T) {
	t.Parallel()
	const objects, perObject, stopAfter = 6, 10, 17
	b := newPgBackend(t, idempotency.PgxConfig{})
	p := newPgInbox(t, b, idempotency.InboxConfig{Workers: 4, IngestWorkers: 4, Lease: time.Minute, Timeout: 10 * time.Second})
	_, err := b.db.Pool.Exec(t.Context(), `CREATE TABLE applied_order (seq bigserial PRIMARY KEY, event_id text NOT NULL)`)
	require.NoError(t, err)
	p.write = func(ctx context.Context, tx idempotency.Tx, eventID string) error {
		_, err := idempotency.PgxTx(tx).Exec(ctx, `INSERT INTO applied_order (event_id) VALUES ($1)`, eventID)
		return err
	}
	for o := range objects {
		for k := range perObject {
			// Equal created for a whole object: the id decides.
			id := fmt.Sprintf("evt_stop_%d_%02d", o, perObject-1-k)
			p.deliver(t, id, fmt.Sprintf("in_stop_%d", o), 0)
		}
	}
	ctx, stop := context.WithCancel(t.Context())
	var mu sync.Mutex
	var seen int
	p.onResult = func(r idempotency.Result) {
		mu.Lock()
		defer mu.Unlock()
		seen++
		if seen == stopAfter {
			stop()
		}
	}
	done := make(chan error, 1)
	go func() { done <- p.inbox.Run(ctx) }()
	// Run applies stopAfter events before the stop: many steps, which a
	// busy machine can take longer for than recv's 30 s.
	require.NoError(t, recvWithin(t, done, time.Minute, fmt.Sprintf("Run, stopped after %d attempts", stopAfter)))

	recs, err := p.inbox.List(t.Context(), idempotency.InboxFilter{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, recs, objects*perObject)
	processed := 0
	for _, r := range recs {
		switch r.State {
		case idempotency.InboxProcessed:
			processed++
			require.Equal(t, 1, r.Attempt, r.EventID)
		case idempotency.InboxPending:
			require.Equal(t, 0, r.Attempt, "%s given back without counting the attempt", r.EventID)
		default:
			t.Fatalf("%s left %s after Run returned", r.EventID, r.State)
		}
	}
	require.GreaterOrEqual(t, processed, stopAfter)

	// The next Run applies the rest.
	p.inbox = p.newInbox(t, b.store)
	ctx2, stop2 := context.WithCancel(t.Context())
	defer stop2()
	go func() { done <- p.inbox.Run(ctx2) }()
	require.Eventually(t, func() bool {
		st, err := p.inbox.Stats(t.Context())
		require.NoError(t, err)
		return st.Counts[idempotency.InboxProcessed] == objects*perObject
	}, 30*time.Second, 10*time.Millisecond)
	stop2()
	require.NoError(t, recv(t, done, "the second Run"))
	for o := range objects {
		object := fmt.Sprintf("in_stop_%d", o)
		require.Equal(t, perObject, b.get(t, object), "%s: each event applied once", object)
		rows, err := b.db.Pool.Query(t.Context(), `SELECT event_id FROM applied_order WHERE event_id LIKE $1 ORDER BY seq`,
			fmt.Sprintf("evt_stop_%d_%%", o))
		require.NoError(t, err)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.True(t, slices.IsSorted(got), "%s applied in id order: %v", object, got)
		require.Len(t, got, perObject)
	}
}

// Run stopped while its lease waits for the lease lock: the lease is not
// cut short (it would leave what it took processing, unworked, until the
// leases expired); once it returns, Run gives every event it took back,
// pending and its attempt not counted, before it returns.
func TestPgxInboxRunStopDuringLease(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	p := newPgInbox(t, b, idempotency.InboxConfig{Workers: 4, IngestWorkers: 4, Lease: time.Minute, Timeout: 10 * time.Second})
	const events = 8
	for i := range events {
		p.deliver(t, fmt.Sprintf("evt_lease_stop_%d", i), fmt.Sprintf("in_lease_stop_%d", i), 0)
	}
	holder, err := b.db.Pool.Begin(t.Context())
	require.NoError(t, err)
	defer holder.Rollback(context.Background()) //nolint:errcheck // committed below
	_, err = holder.Exec(t.Context(), `SELECT pg_advisory_xact_lock(hashtextextended('idempotency.inbox.lease:' || $1, 0))`, b.db.Schema)
	require.NoError(t, err)

	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.inbox.Run(ctx) }()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, b.db.Pool.QueryRow(t.Context(),
			`SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'advisory' AND application_name = $1`, b.db.Schema).Scan(&n))
		return n == 1
	}, 10*time.Second, time.Millisecond, "Run's lease waits for the lock")
	stop()
	require.NoError(t, holder.Commit(t.Context()))
	require.NoError(t, recv(t, done, "Run"))

	recs, err := p.inbox.List(t.Context(), idempotency.InboxFilter{})
	require.NoError(t, err)
	require.Len(t, recs, events)
	for _, r := range recs {
		require.Equal(t, idempotency.InboxPending, r.State, r.EventID)
		require.Zero(t, r.Attempt, r.EventID)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	require.Empty(t, p.results, "no attempt started after the stop")
}
