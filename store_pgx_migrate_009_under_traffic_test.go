package idempotency_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxMigrate009UnderTraffic: a replica of the new release migrates,
// three times at once, a schema at 008 while a replica of the release
// before serves: 4 senders deliver events that enqueue a send-receipt task
// per invoice (one in five a twin), and its workers apply the events and
// run the tasks. Two of its event transactions are held open after their
// task's insert, so migration 009's index waits for the inbox; meanwhile
// ingest waits behind it. Once they commit the index is built, valid, and
// the traffic goes on: every event is applied once, every task processed
// with one effect at the provider, and a prune then clears the arguments
// of every task.
func TestPgxMigrate009UnderTraffic(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a := newTaskApp(t)
	a.withReceipts(a.db.Pool, nil)
	// The schema at 008: 009 adds the index alone.
	for _, q := range []string{
		`DROP INDEX idempotency_inbox_task_args_idx`,
		`DELETE FROM idempotency_migrations WHERE version = 9`,
	} {
		_, err := a.db.Pool.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	// The held attempts wait at the gate, under Timeout, while the traffic
	// and Migrate go on (each awaited up to 30 s): they must not run out
	// before the gate opens.
	old := a.process(t, "old", idempotency.InboxConfig{Workers: 4, PollInterval: 100 * time.Millisecond, Backoff: faultBackoff,
		Timeout: 2 * time.Minute, Lease: 4 * time.Minute})
	g := newFaultGate(2)
	a.setHook(g.hook)
	t.Cleanup(g.open)
	old.run(t)
	events := faultEvents("mig9", 300, 5)
	tr := a.startAll(t, []http.Handler{old.handler}, events, 4)
	held := g.await(t, 2)
	faultAwait(t, 30*time.Second, "50 events accepted", func() bool { return tr.accepted.Load() >= 50 })

	replica := a.process(t, "new", idempotency.InboxConfig{})
	store, err := idempotency.NewPgxStore(replica.pool, idempotency.PgxConfig{Schema: a.db.Schema})
	require.NoError(t, err)
	migrated := make(chan struct{})
	go func() {
		defer close(migrated)
		migrateAtOnce(t, a.db, store, a.db.Schema, 3)
	}()
	faultAwait(t, 30*time.Second, "migration 009 waiting for the held transactions", func() bool {
		var n int
		err := a.admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE application_name = $1 AND wait_event_type = 'Lock' AND query LIKE '%idempotency_inbox_task_args_idx%'`, replica.appName).Scan(&n)
		return err == nil && n > 0
	})
	g.open()
	select {
	case <-migrated:
	case <-time.After(30 * time.Second):
		require.FailNow(t, "Migrate did not return")
	}
	var valid bool
	require.NoError(t, a.db.Pool.QueryRow(ctx, `SELECT indisvalid FROM pg_index
WHERE indexrelid = to_regclass('idempotency_inbox_task_args_idx')`).Scan(&valid))
	require.True(t, valid, "migration 009's index built, valid")

	tr.wg.Wait()
	require.Len(t, tr.sent, len(events))
	invoices := len(events) - len(events)/5
	a.awaitInbox(t, 5*time.Minute, "every event and task processed", func(st idempotency.InboxStats) bool {
		return st.Counts[idempotency.InboxProcessed] == len(events)+invoices
	})
	old.stop()
	a.requireExactlyOnce(t, events)
	a.requireReceipts(t, events)
	for _, id := range held {
		require.Equal(t, 1, a.record(t, id).Attempt, "%s, held while Migrate waited, committed in its first attempt", id)
	}
	require.NotContains(t, a.logs.String(), "deadlock", "a deadlock between Migrate and the traffic")

	// The tasks finished are cleared, each once.
	rep, err := store.Prune(ctx, idempotency.Retention{Payloads: time.Nanosecond, Pause: -1,
		Now: func() time.Time { return time.Now().Add(time.Second) }})
	require.NoError(t, err)
	require.Equal(t, invoices, rep.TaskArgsCleared)
}
