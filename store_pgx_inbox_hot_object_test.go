package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxInboxFaultHotObjectBacklog: 400 events of one invoice (a hot
// object) arrive in random order while its first is held in its handler,
// beside 100 events of invoices of their own. The leases park the hot
// object's waiting events but its first two (migration 014), and apply
// the others meanwhile. Released, the workers apply the hot object's
// events one at a time in created order, every 50th failing once and
// the process's sessions ended twice on the way; every event is applied
// once, and nothing is left parked. PostgreSQL watches the "one at a
// time" with a unique index, as in TestPgxInboxFaultOrderUnderBusyWorkers.
func TestPgxInboxFaultHotObjectBacklog(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a := newFaultApp(t)
	_, err := a.db.Pool.Exec(ctx, `CREATE UNIQUE INDEX one_processing_per_object ON idempotency_inbox (object_id)
WHERE state = 'processing' AND object_id <> ''`)
	require.NoError(t, err)
	const hot, others = 400, 100
	p := a.process(t, "main", idempotency.InboxConfig{
		Workers: 8, Lease: faultLease, Timeout: faultTimeout, PollInterval: 100 * time.Millisecond, Backoff: faultBackoff,
	})
	hotID := func(i int) string { return fmt.Sprintf("evt_hot_%04d", i) }
	held, release := make(chan struct{}), make(chan struct{})
	open := sync.OnceFunc(func() { close(release) })
	t.Cleanup(open)
	var mu sync.Mutex
	failed := map[string]bool{} // the events failed once
	failOnce := func(eventID string) bool {
		mu.Lock()
		defer mu.Unlock()
		first := !failed[eventID]
		failed[eventID] = true
		return first
	}
	a.setHook(func(ctx context.Context, _ idempotency.Tx, _, eventID string) error {
		var i int
		if _, err := fmt.Sscanf(eventID, "evt_hot_%d", &i); err != nil {
			return nil
		}
		switch {
		case i == 0 && failOnce(eventID): // held, then failed: applied on its second attempt
			close(held)
			select {
			case <-release:
				return errors.New("the downstream timed out")
			case <-ctx.Done():
				return ctx.Err()
			}
		case i%50 == 25 && failOnce(eventID):
			return errors.New("the downstream refused")
		}
		return nil
	})
	p.run(t)

	var events []faultEvent
	for i := range hot {
		events = append(events, faultEvent{ID: hotID(i), Type: "invoice.paid", Invoice: "in_hot", Account: "acct_hot", Created: int64(i)})
	}
	for i := range others {
		events = append(events, faultEvent{ID: fmt.Sprintf("evt_cold_%04d", i), Type: "invoice.paid",
			Invoice: fmt.Sprintf("in_cold_%04d", i), Account: "acct_cold", Created: int64(i)})
	}
	a.sendAll(t, []http.Handler{p.handler}, events[:1], 1)
	select {
	case <-held:
	case <-time.After(time.Minute):
		require.FailNow(t, "the hot object's first event did not reach its handler")
	}
	rest := events[1:]
	rand.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	a.sendAll(t, []http.Handler{p.handler}, rest, 8)
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		require.NoError(t, a.db.Pool.QueryRow(ctx, q, args...).Scan(&n), q)
		return n
	}
	faultAwait(t, time.Minute, "the hot object's waiting events parked but its second, the others applied", func() bool {
		return count(`SELECT count(*) FROM idempotency_inbox WHERE parked`) == hot-2 &&
			count(`SELECT count(*) FROM applied WHERE object_id LIKE 'in_cold_%'`) == others
	})
	require.Zero(t, count(`SELECT count(*) FROM idempotency_inbox WHERE parked AND event_id IN ($1, $2)`, hotID(0), hotID(1)),
		"the object's first two events are never parked")

	open()
	for _, applied := range []int{100, 250} {
		faultAwait(t, time.Minute, fmt.Sprintf("%d hot events applied", applied), func() bool {
			return count(`SELECT count(*) FROM applied WHERE object_id = 'in_hot'`) >= applied
		})
		a.terminateSessions(t, p)
	}
	a.awaitDrained(t, len(events), 2*time.Minute)
	p.stop()

	require.NotContains(t, a.logs.String(), "one_processing_per_object", "two events of one object at once")
	rows, err := a.db.Pool.Query(ctx, `SELECT event_id FROM applied WHERE object_id = 'in_hot' ORDER BY seq`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	want := make([]string, hot)
	for i := range want {
		want[i] = hotID(i)
	}
	require.Equal(t, want, got, "the hot object's events in created order")
	require.Zero(t, count(`SELECT count(*) FROM idempotency_inbox WHERE parked`), "nothing left parked")
	a.requireExactlyOnce(t, events)
	mu.Lock()
	defer mu.Unlock()
	for id := range failed {
		require.GreaterOrEqual(t, len(a.attemptResults(id)), 2, "%s failed once, then applied", id)
	}
}
