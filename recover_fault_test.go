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

// TestPgxRecoverFault: see above; the restart's subtest is not parallel.
func TestPgxRecoverFault(t *testing.T) {
	t.Run("sessions-terminated", func(t *testing.T) {
		t.Parallel()
		a := newFaultApp(t)
		recoverFault(t, a, a.db.URL, func(t *testing.T, p *faultProc) func() {
			require.Positive(t, a.terminateSessions(t, p))
			return func() {}
		})
	})
	t.Run("database-restart", func(t *testing.T) {
		cluster := pgtest.Server(t) // not parallel: it stops the shared server
		a := newFaultApp(t)
		recoverFault(t, a, cluster.TCP(t, a.db.URL), func(t *testing.T, _ *faultProc) func() {
			cluster.Stop(t)
			return func() { cluster.Start(t) }
		})
	})
}

// recoverFault is the scenario; fault strikes while the 26th event's
// handler is held, and the function it returns brings the database back.
func recoverFault(t *testing.T, a *faultApp, url string, fault func(t *testing.T, p *faultProc) (back func())) {
	p := a.processOn(t, "recover", url, idempotency.InboxConfig{})
	store, err := idempotency.NewPgxStore(p.pool, idempotency.PgxConfig{Schema: a.db.Schema})
	require.NoError(t, err)
	h, err := idempotency.NewHandler(store, a.handlers("recover"), idempotency.Config{
		Secrets: []string{testSecret}, Logger: a.logger, Timeout: 5 * time.Second,
	})
	require.NoError(t, err)

	events := faultEvents("recover", 60, 5)
	f := newFakeStripe()
	for k := range events {
		events[k].Created = int64(k) // one a second, in order; twins after their invoice.paid
		f.add(a.payload(events[k]))
	}
	client := f.serve(t)
	opts := idempotency.RecoverOptions{
		Since: time.Unix(faultCreated, 0), Now: func() time.Time { return time.Unix(faultCreated+3600, 0) },
		Checkpoint: "fault", PageSize: 10, RequestsPerSecond: 100,
	}

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
	ids := make([]string, len(events))
	for k, ev := range events {
		ids[k] = ev.ID
	}
	var stored string
	err = a.db.Pool.QueryRow(t.Context(), `SELECT last_event_id FROM idempotency_recovery WHERE name = 'fault'`).Scan(&stored)
	require.NoError(t, err, "the first pages' checkpoint")
	for what, last := range map[string]string{"stored": stored, "reported": first.rep.LastEventID} {
		at := slices.Index(ids, last)
		require.GreaterOrEqual(t, at, 9, "the %s checkpoint %q: the first page was handled", what, last)
		require.Less(t, at, 25, "the %s checkpoint %q is at or after the held event", what, last)
		for _, id := range ids[:at+1] {
			require.True(t, applied(id), "the %s checkpoint %q is ahead of %s, not applied", what, last, id)
		}
	}
	require.False(t, applied(held), "the held event committed through the fault")

	second, err := h.Recover(t.Context(), client, opts)
	require.NoError(t, err)
	require.True(t, second.Resumed)
	require.Equal(t, ids[len(ids)-1], second.LastEventID)
	require.Zero(t, second.Failed, "%+v", second)
	require.Equal(t, second.Listed, second.Processed+second.Duplicate, "%+v", second)
	require.Equal(t, len(ids)-1-slices.Index(ids, stored), second.Listed, "the run continues after the stored checkpoint: %+v", second)
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
