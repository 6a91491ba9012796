package idempotency_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// Handler.Recover on a real PostgreSQL, with faults: the service of the
// inbox's fault tests (faultApp), synchronous, recovers 60 events from the
// fake Events API with a checkpoint, 10 a page. While the handler of the
// 26th is inside its transaction, the process's sessions end
// (pg_terminate_backend) or the database stops. The run returns an error
// (no hang, no panic); the checkpoint, as stored and as reported, stands
// at an event up to which every event was applied; once the database is
// back, the checkpoint's next run applies every event missed, and each
// event is applied exactly once.

// TestPgxRecoverFault: see above, the database restarted (not parallel:
// it stops the shared server).
func TestPgxRecoverFault(t *testing.T) { recoverRestartFault(t, recoverFault) }

// TestPgxRecoverFaultSessionsTerminated: see above, the process's
// sessions terminated. Apart from TestPgxRecoverFault, which is not
// parallel, so that it runs beside the other parallel tests: go test
// runs the tests that are not parallel, and their subtests, first, one
// after another.
func TestPgxRecoverFaultSessionsTerminated(t *testing.T) {
	t.Parallel()
	recoverSessionsFault(t, recoverFault)
}

// recoverFaultScenario runs a recovery on a's schema, connecting with url;
// fault ends the process's sessions or stops the database, and the
// function it returns brings the database back.
type recoverFaultScenario func(t *testing.T, a *faultApp, url string, fault func(t *testing.T, p *faultProc) (back func()))

// recoverSessionsFault runs scenario with the process's sessions
// terminated.
func recoverSessionsFault(t *testing.T, scenario recoverFaultScenario) {
	a := newFaultApp(t)
	scenario(t, a, a.db.URL, func(t *testing.T, p *faultProc) func() {
		require.Positive(t, a.terminateSessions(t, p))
		return func() {}
	})
}

// recoverRestartFault runs scenario with the database restarted (not
// parallel: it stops the shared server).
func recoverRestartFault(t *testing.T, scenario recoverFaultScenario) {
	t.Run("database-restart", func(t *testing.T) {
		cluster := pgtest.Server(t)
		a := newFaultApp(t)
		scenario(t, a, cluster.TCP(t, a.db.URL), func(t *testing.T, _ *faultProc) func() {
			cluster.Stop(t)
			return func() { cluster.Start(t) }
		})
	})
}

// recoverFaultEvents are the 60 events of a recovery scenario, one a
// second and in order (twins after their invoice.paid), their ids, the
// fake Events API that lists them, and the options that recover them 10 a
// page under checkpoint.
func recoverFaultEvents(a *faultApp, prefix, checkpoint string) ([]faultEvent, []string, *fakeStripe, idempotency.RecoverOptions) {
	events := faultEvents(prefix, 60, 5)
	ids := make([]string, len(events))
	f := newFakeStripe()
	for k := range events {
		events[k].Created = int64(k)
		ids[k] = events[k].ID
		f.add(a.payload(events[k]))
	}
	opts := idempotency.RecoverOptions{
		Since: time.Unix(faultCreated, 0), Now: func() time.Time { return time.Unix(faultCreated+3600, 0) },
		Checkpoint: checkpoint, PageSize: 10, RequestsPerSecond: 100,
	}
	return events, ids, f, opts
}

// requireCheckpointBehind requires the checkpoint, as stored and as
// reported, at index from of ids or later, and never ahead of what was
// handled: handled holds for every event up to it. It returns the stored
// checkpoint's event.
func requireCheckpointBehind(t *testing.T, a *faultApp, checkpoint, reported string, ids []string, from int, handled func(id string) bool) string {
	t.Helper()
	var stored string
	err := a.db.Pool.QueryRow(t.Context(), `SELECT last_event_id FROM idempotency_recovery WHERE name = $1`, checkpoint).Scan(&stored)
	require.NoError(t, err, "the first pages' checkpoint")
	for what, last := range map[string]string{"stored": stored, "reported": reported} {
		at := slices.Index(ids, last)
		require.GreaterOrEqual(t, at, from, "the %s checkpoint %q: the first pages were handled", what, last)
		for _, id := range ids[:at+1] {
			require.True(t, handled(id), "the %s checkpoint %q is ahead of %s, not handled", what, last, id)
		}
	}
	return stored
}

// requireResumed requires the checkpoint's next run to have continued
// from stored and handled every event left, none failed. The events are a
// second apart: the RecoveryOverlap it lists again behind stored reaches
// the first.
func requireResumed(t *testing.T, rep idempotency.RecoverReport, ids []string, stored string) {
	t.Helper()
	require.True(t, rep.Resumed)
	require.Equal(t, ids[len(ids)-1], rep.LastEventID)
	require.Zero(t, rep.Failed, "%+v", rep)
	require.Equal(t, rep.Listed, rep.Processed+rep.Queued+rep.Duplicate, "%+v", rep)
	require.Equal(t, len(ids), rep.Listed, "the run lists again from RecoveryOverlap before the stored checkpoint: %+v", rep)
	require.GreaterOrEqual(t, rep.Duplicate, slices.Index(ids, stored)+1, "the events up to the stored checkpoint are duplicates: %+v", rep)
}

// recoverFault is the scenario (a recoverFaultScenario); fault strikes
// while the 26th event's handler is held.
func recoverFault(t *testing.T, a *faultApp, url string, fault func(t *testing.T, p *faultProc) (back func())) {
	p := a.processOn(t, "recover", url, idempotency.InboxConfig{})
	store, err := idempotency.NewPgxStore(p.pool, idempotency.PgxConfig{Schema: a.db.Schema})
	require.NoError(t, err)
	// The held event's handler waits at the gate while the fault strikes
	// (the database stopped, on a loaded machine in seconds): its Timeout
	// must outlast that, or the run fails with ErrTimeout, not the fault's
	// ErrStoreUnavailable.
	h, err := idempotency.NewHandler(store, a.handlers("recover"), idempotency.Config{
		Secrets: []string{testSecret}, Logger: a.logger, Timeout: 30 * time.Second,
	})
	require.NoError(t, err)

	events, ids, f, opts := recoverFaultEvents(a, "recover", "fault")
	client := f.serve(t)

	held := events[25].ID
	g := newFaultGate(1)
	a.setHook(func(ctx context.Context, tx idempotency.Tx, proc, eventID string) error {
		if eventID == held {
			return g.hook(ctx, tx, proc, eventID)
		}
		return nil
	})
	t.Cleanup(g.open)
	type result struct {
		rep idempotency.RecoverReport
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := h.Recover(context.Background(), client, opts)
		done <- result{rep, err}
	}()
	g.await(t, 1)
	back := fault(t, p)
	g.open()
	first := recv(t, done, "the interrupted run")
	back()
	a.setHook(nil)
	require.Error(t, first.err, "the run went on through the fault: %+v", first.rep)
	require.ErrorIs(t, first.err, idempotency.ErrStoreUnavailable)
	t.Logf("the interrupted run: %+v: %v", first.rep, first.err)

	// The checkpoint, stored and reported, is never ahead of what was
	// applied: every event up to it is in the ledger.
	applied := func(id string) bool {
		_, ok, err := store.LookupEvent(t.Context(), id)
		require.NoError(t, err)
		return ok
	}
	stored := requireCheckpointBehind(t, a, opts.Checkpoint, first.rep.LastEventID, ids, 9, applied)
	require.Less(t, slices.Index(ids, stored), 25, "the stored checkpoint %q is at or after the held event", stored)
	require.Less(t, slices.Index(ids, first.rep.LastEventID), 25, "the reported checkpoint %q is at or after the held event", first.rep.LastEventID)
	require.False(t, applied(held), "the held event committed through the fault")

	second, err := h.Recover(t.Context(), client, opts)
	require.NoError(t, err)
	requireResumed(t, second, ids, stored)
	requireAppliedOnceSync(t, a, events)
}

// requireAppliedOnceSync is requireExactlyOnce for a synchronous Handler,
// which stores nothing in the inbox: each distinct event claimed and its
// handler's writes committed exactly once, no other event, one credit of
// 100 per distinct invoice.
func requireAppliedOnceSync(t *testing.T, a *faultApp, events []faultEvent) {
	t.Helper()
	ctx := t.Context()
	ids := map[string]bool{}
	credits := map[string]int{}
	invoices := map[string]bool{}
	for _, ev := range events {
		ids[ev.ID] = true
		if !invoices[ev.Invoice] {
			invoices[ev.Invoice] = true
			credits[ev.Account] += 100
		}
	}
	count := func(q string) int {
		t.Helper()
		var n int
		require.NoError(t, a.db.Pool.QueryRow(ctx, q).Scan(&n), q)
		return n
	}
	require.Equal(t, len(ids), count(`SELECT count(*) FROM idempotency_events WHERE outcome = 'processed'`), "ledger rows")
	require.Equal(t, len(ids), count(`SELECT count(*) FROM idempotency_events`), "ledger rows")
	require.Equal(t, len(ids), count(`SELECT count(*) FROM applied`), "handler writes committed")
	require.Equal(t, len(ids), count(`SELECT count(DISTINCT event_id) FROM applied`), "events whose handler's writes committed")
	rows, err := a.db.Pool.Query(ctx, `SELECT event_id FROM applied`)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		require.True(t, ids[id], "%s applied, not sent", id)
	}
	require.NoError(t, rows.Err())
	got := map[string]int{}
	for acct := range credits {
		var n int
		err := a.db.Pool.QueryRow(ctx, `SELECT credits FROM accounts WHERE id = $1`, acct).Scan(&n)
		require.NoError(t, err, acct)
		got[acct] = n
	}
	require.Equal(t, credits, got, "credits per account: 100 per distinct invoice")
	require.Equal(t, len(credits), count(`SELECT count(*) FROM accounts`), "no other account credited")
}
