package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// Prune and Forget on a real PostgreSQL, with faults: the service of the
// inbox's fault tests (faultApp). A deferred trigger holds the commit of a
// transaction that deletes guards (a prune batch, a Forget) until the test
// opens it; meanwhile the process's sessions end (pg_terminate_backend) or
// the database stops.

// commitGate holds, at its commit, each transaction that deleted rows of
// a table (newTriggerGate: other writes, at other points): a constraint
// trigger waits for an advisory lock that the test holds on a connection
// of its own until open.
type commitGate struct {
	key  int64
	conn *pgxpool.Conn
}

func newCommitGate(t *testing.T, a *faultApp, table string) *commitGate {
	t.Helper()
	return newTriggerGate(t, a.db, "DELETE", table, "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW")
}

// newTriggerGate is newCommitGate for the rows of table that event
// (DELETE, INSERT) writes, with the trigger's spec (its deferral, FOR EACH
// ROW, a WHEN): NOT DEFERRABLE holds the statement at its end, inside its
// transaction, before it can commit.
func newTriggerGate(t *testing.T, db *pgtest.DB, event, table, spec string) *commitGate {
	t.Helper()
	ctx := t.Context()
	g := &commitGate{}
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT hashtextextended($1, 0)`, db.Schema+".commit_gate").Scan(&g.key))
	schema := quoteIdent(db.Schema)
	_, err := db.Pool.Exec(ctx, fmt.Sprintf(`
CREATE FUNCTION %[1]s.commit_gate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(%[3]d);
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER commit_gate AFTER %[4]s ON %[1]s.%[2]s
    %[5]s EXECUTE FUNCTION %[1]s.commit_gate();`, schema, quoteIdent(table), g.key, event, spec))
	require.NoError(t, err)
	g.conn, err = db.Pool.Acquire(ctx) // not a session of the processes: no fault ends it but a stop
	require.NoError(t, err)
	t.Cleanup(g.conn.Release)
	_, err = g.conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, g.key)
	require.NoError(t, err)
	return g
}

// awaitHeld waits until a session of application name appName (a
// process's) waits at the gate.
func (g *commitGate) awaitHeld(t *testing.T, a *faultApp, appName string) {
	t.Helper()
	faultAwait(t, time.Minute, appName+" held at the gate", func() bool {
		var n int
		err := a.admin.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
WHERE application_name = $1 AND wait_event_type = 'Lock' AND wait_event = 'advisory'`, appName).Scan(&n)
		return err == nil && n > 0
	})
}

// open lets the held commits go on, when the gate's session is still there.
func (g *commitGate) open(t *testing.T) {
	t.Helper()
	if _, err := g.conn.Exec(t.Context(), `SELECT pg_advisory_unlock($1)`, g.key); err != nil {
		t.Logf("the gate's session ended with the database: %v", err)
	}
}

// retentionFault takes the database from p while a transaction of p is
// held at the gate; the function it returns brings it back.
type retentionFault func(t *testing.T, a *faultApp, p *faultProc) (back func())

func terminateRetention(t *testing.T, a *faultApp, p *faultProc) func() {
	require.Positive(t, a.terminateSessions(t, p))
	return func() {}
}

func stopRetention(cluster *pgtest.Cluster) retentionFault {
	return func(t *testing.T, _ *faultApp, _ *faultProc) func() {
		cluster.Stop(t)
		return func() { cluster.Start(t) }
	}
}

// pruneScene is what TestPgxPruneFault stores, dated back by SQL: 30 old
// events (claims 60 days old, finished 60 days ago, their guards 300 days
// old, but the first 5 guards 200 days old: the keys of the awaiting
// event), 5 recent events, a dead letter, and an event pending for 170
// days.
type pruneScene struct {
	old, recent      []faultEvent
	dead, pending    faultEvent
	keptOld, goneOld []string // invoices of the old events whose guards stay, go
}

func newPruneScene(t *testing.T, a *faultApp, p *faultProc) *pruneScene {
	t.Helper()
	ctx := t.Context()
	s := &pruneScene{
		old:     faultEvents("prune_old", 30, 0),
		recent:  faultEvents("prune_new", 5, 0),
		dead:    faultEvent{ID: "evt_prune_dead", Type: "invoice.paid", Invoice: "in_prune_dead", Account: "acct_prune_dead"},
		pending: faultEvent{ID: "evt_prune_pending", Type: "invoice.paid", Invoice: "in_prune_pending", Account: "acct_prune_pending"},
	}
	a.setHook(func(_ context.Context, _ idempotency.Tx, _, eventID string) error {
		if eventID == s.dead.ID {
			return idempotency.Permanent(fmt.Errorf("refused"))
		}
		return nil
	})
	a.sendAll(t, []http.Handler{p.handler}, append(append(append([]faultEvent{}, s.old...), s.recent...), s.dead), 4)
	for {
		n, err := p.inbox.WorkDue(ctx)
		require.NoError(t, err)
		if n == 0 {
			break
		}
	}
	a.setHook(nil)
	a.sendAll(t, []http.Handler{p.handler}, []faultEvent{s.pending}, 1)
	require.Equal(t, idempotency.InboxDeadLetter, a.record(t, s.dead.ID).State)
	require.Equal(t, idempotency.InboxPending, a.record(t, s.pending.ID).State)

	var oldIDs []string
	for i, ev := range s.old {
		oldIDs = append(oldIDs, ev.ID)
		if i < 5 {
			s.keptOld = append(s.keptOld, ev.Invoice)
		} else {
			s.goneOld = append(s.goneOld, ev.Invoice)
		}
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`UPDATE idempotency_events SET processed_at = processed_at - interval '60 days' WHERE event_id = ANY ($1)`, []any{oldIDs}},
		{`UPDATE idempotency_inbox SET received_at = received_at - interval '60 days', finished_at = finished_at - interval '60 days' WHERE event_id = ANY ($1)`, []any{oldIDs}},
		{`UPDATE idempotency_guards SET claimed_at = claimed_at - interval '300 days' WHERE key = ANY ($1)`, []any{s.goneOld}},
		{`UPDATE idempotency_guards SET claimed_at = claimed_at - interval '200 days' WHERE key = ANY ($1)`, []any{s.keptOld}},
		{`UPDATE idempotency_inbox SET received_at = received_at - interval '170 days' WHERE event_id = $1`, []any{s.pending.ID}},
	} {
		_, err := a.db.Pool.Exec(ctx, q.sql, q.args...)
		require.NoError(t, err, q.sql)
	}
	return s
}

// pruneSceneRetention prunes a pruneScene in batches of 4, guards past
// their window too.
var pruneSceneRetention = idempotency.Retention{
	Guards: idempotency.DefaultEventIDRetention + idempotency.DefaultDeadLetterRetention, BatchSize: 4, Pause: -1,
}

// requireKept checks that nothing the retention keeps is gone, and
// reports how many rows it deletes are left.
func (s *pruneScene) requireKept(t *testing.T, a *faultApp) (left int) {
	t.Helper()
	ctx := t.Context()
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		require.NoError(t, a.db.Pool.QueryRow(ctx, q, args...).Scan(&n), q)
		return n
	}
	var recentIDs, recentInvoices, oldIDs []string
	for _, ev := range s.recent {
		recentIDs = append(recentIDs, ev.ID)
		recentInvoices = append(recentInvoices, ev.Invoice)
	}
	for _, ev := range s.old {
		oldIDs = append(oldIDs, ev.ID)
	}
	require.Equal(t, len(s.recent), count(`SELECT count(*) FROM idempotency_events WHERE event_id = ANY ($1)`, recentIDs), "claims in their window")
	require.Equal(t, len(s.recent), count(`SELECT count(*) FROM idempotency_inbox WHERE event_id = ANY ($1)`, recentIDs), "finished events in their window")
	require.Equal(t, len(s.recent), count(`SELECT count(*) FROM idempotency_guards WHERE key = ANY ($1)`, recentInvoices), "guards in their window")
	require.Equal(t, len(s.keptOld), count(`SELECT count(*) FROM idempotency_guards WHERE key = ANY ($1)`, s.keptOld), "the awaiting event's keys")
	require.Equal(t, idempotency.InboxDeadLetter, a.record(t, s.dead.ID).State, "the dead letter in its window")
	require.Equal(t, idempotency.InboxPending, a.record(t, s.pending.ID).State, "the pending event")
	return count(`SELECT count(*) FROM idempotency_events WHERE event_id = ANY ($1)`, oldIDs) +
		count(`SELECT count(*) FROM idempotency_inbox WHERE event_id = ANY ($1)`, oldIDs) +
		count(`SELECT count(*) FROM idempotency_guards WHERE key = ANY ($1)`, s.goneOld)
}

// TestPgxPruneFault: a prune in batches of 4 whose first batch of guards
// is held at its commit when the process's sessions end
// (TestPgxPruneFaultSessionsTerminated), or when the database stops (not
// parallel). The batch's deletions are undone with
// it; the prune either goes on and completes (a session that ended is
// another connection away) or returns an error, ErrStoreUnavailable.
// Nothing the retention keeps is deleted: claims and finished events in
// their windows, guards in theirs, the keys of the event pending for 170
// days, the dead letter, the pending event. Once the database is back,
// a prune deletes every row past its window.
func TestPgxPruneFault(t *testing.T) {
	t.Run("database-stopped", func(t *testing.T) {
		cluster := pgtest.Server(t) // not parallel: it stops the shared server
		a := newFaultApp(t)
		pruneFault(t, a, cluster.TCP(t, a.db.URL), stopRetention(cluster))
	})
}

// TestPgxPruneFaultSessionsTerminated is TestPgxPruneFault with the
// process's sessions ended. Apart from it, which is not parallel, so that
// it runs beside the other parallel tests: go test runs the tests that
// are not parallel, and their subtests, first, one after another.
func TestPgxPruneFaultSessionsTerminated(t *testing.T) {
	t.Parallel()
	pruneFault(t, newFaultApp(t), "", terminateRetention)
}

func pruneFault(t *testing.T, a *faultApp, url string, fault retentionFault) {
	if url == "" {
		url = a.db.URL
	}
	p := a.processOn(t, "pruner", url, idempotency.InboxConfig{MaxAttempts: 1})
	store, err := idempotency.NewPgxStore(p.pool, idempotency.PgxConfig{Schema: a.db.Schema})
	require.NoError(t, err)
	s := newPruneScene(t, a, p)
	const all = 30 + 30 + 25 // the old claims, their finished events, their guards past every window
	require.Equal(t, all, s.requireKept(t, a))

	r := pruneSceneRetention
	g := newCommitGate(t, a, "idempotency_guards")
	type result struct {
		rep idempotency.PruneReport
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := store.Prune(context.Background(), r)
		done <- result{rep, err}
	}()
	g.awaitHeld(t, a, p.appName)
	back := fault(t, a, p)
	g.open(t)
	first := recv(t, done, "the interrupted prune")
	back()
	t.Logf("the interrupted prune: %+v, %v", first.rep, first.err)
	left := s.requireKept(t, a)
	if first.err != nil {
		require.ErrorIs(t, first.err, idempotency.ErrStoreUnavailable)
	} else {
		require.Zero(t, left, "the prune reported success and left rows past their windows: %+v", first.rep)
		require.Equal(t, idempotency.PruneReport{EventIDs: 30, Events: 30, Guards: 25}, first.rep)
	}
	require.Equal(t, all-first.rep.Total(), left, "the report counts what was deleted: %+v", first.rep)

	rep, err := store.Prune(t.Context(), r)
	require.NoError(t, err)
	require.Equal(t, left, rep.Total(), "the rerun deletes the rest: %+v", rep)
	require.Zero(t, s.requireKept(t, a))
}

// TestPgxForgetFault: Forget of a processed event (its claim, its guard,
// its finished inbox row) is held at its commit when the process's
// sessions end (TestPgxForgetFaultSessionsTerminated), or when the
// database stops (not parallel). It leaves all
// of the event or none of it: either it reports the event forgotten (a
// session that ended is another connection away) and nothing of it is
// left, or it returns ErrStoreUnavailable and everything is there; then
// Forget again forgets it all, and a resend is applied again.
func TestPgxForgetFault(t *testing.T) {
	t.Run("database-stopped", func(t *testing.T) {
		cluster := pgtest.Server(t) // not parallel: it stops the shared server
		a := newFaultApp(t)
		forgetFault(t, a, cluster.TCP(t, a.db.URL), stopRetention(cluster))
	})
}

// TestPgxForgetFaultSessionsTerminated is TestPgxForgetFault with the
// process's sessions ended; parallel, apart from it (see
// TestPgxPruneFaultSessionsTerminated).
func TestPgxForgetFaultSessionsTerminated(t *testing.T) {
	t.Parallel()
	forgetFault(t, newFaultApp(t), "", terminateRetention)
}

func forgetFault(t *testing.T, a *faultApp, url string, fault retentionFault) {
	if url == "" {
		url = a.db.URL
	}
	p := a.processOn(t, "forgetter", url, idempotency.InboxConfig{})
	ev := faultEvent{ID: "evt_forget_fault", Type: "invoice.paid", Invoice: "in_forget_fault", Account: "acct_forget_fault"}
	a.sendAll(t, []http.Handler{p.handler}, []faultEvent{ev}, 1)
	n, err := p.inbox.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	a.requireExactlyOnce(t, []faultEvent{ev})
	// What makes the event known: its claim, its guard, its inbox row.
	known := func() (claims, guards, rows int) {
		t.Helper()
		require.NoError(t, a.db.Pool.QueryRow(t.Context(), `SELECT
    (SELECT count(*) FROM idempotency_events WHERE event_id = $1),
    (SELECT count(*) FROM idempotency_guards WHERE event_id = $1),
    (SELECT count(*) FROM idempotency_inbox WHERE event_id = $1)`, ev.ID).Scan(&claims, &guards, &rows))
		return claims, guards, rows
	}

	g := newCommitGate(t, a, "idempotency_guards")
	type result struct {
		found bool
		err   error
	}
	done := make(chan result, 1)
	go func() {
		found, err := p.inbox.Forget(context.Background(), ev.ID)
		done <- result{found, err}
	}()
	g.awaitHeld(t, a, p.appName)
	back := fault(t, a, p)
	g.open(t)
	first := recv(t, done, "the interrupted Forget")
	back()
	claims, guards, rows := known()
	t.Logf("the interrupted Forget: %v, %v; left: %d claims, %d guards, %d inbox rows", first.found, first.err, claims, guards, rows)
	if first.err != nil {
		require.ErrorIs(t, first.err, idempotency.ErrStoreUnavailable)
		require.False(t, first.found)
		require.Equal(t, [3]int{1, 1, 1}, [3]int{claims, guards, rows}, "a failed Forget leaves all of the event")
		found, err := p.inbox.Forget(t.Context(), ev.ID)
		require.NoError(t, err)
		require.True(t, found)
		claims, guards, rows = known()
	} else {
		require.True(t, first.found, "the event was known")
	}
	require.Equal(t, [3]int{0, 0, 0}, [3]int{claims, guards, rows}, "a Forget that succeeded leaves none of the event")

	// Forgotten, the event is applied again when it is sent again.
	a.sendAll(t, []http.Handler{p.handler}, []faultEvent{ev}, 1)
	n, err = p.inbox.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, idempotency.InboxProcessed, a.record(t, ev.ID).State)
	require.Equal(t, 2, a.handlerRuns(ev.ID), "applied again after Forget")
}
