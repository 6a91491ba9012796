package idempotency_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// helperPrunerPruned is what the process of TestPgxPruneKilled says once
// its prune committed the batches of the claims and the finished events,
// before the guards'.
const helperPrunerPruned = "helper pruner: the claims and the finished events pruned"

// TestPgxPruneKilled is TestPgxPruneFault with a SIGKILL: a process running
// PruneEvery on a pruneScene, in batches of 4, is killed while its first
// batch of guards is held at the end of its DELETE, inside its
// transaction, after the claims' and the finished events' batches
// committed: the trigger of the batch's third guard waits at the gate.
// While the dead process's session still holds that batch (and the prune
// lock), a prune in the test's process returns ErrPruneRunning and
// deletes nothing. Once the session ends, the batch is rolled back as
// a whole: every guard is there, and nothing the retention keeps is gone
// (claims, finished events and guards in their windows, the keys of the
// event pending for 170 days, the dead letter, the pending event). A prune
// then deletes exactly the 25 guards past their window.
func TestPgxPruneKilled(t *testing.T) {
	t.Parallel()
	a := newFaultApp(t)
	p := a.process(t, "pruner", idempotency.InboxConfig{MaxAttempts: 1})
	store, err := idempotency.NewPgxStore(p.pool, idempotency.PgxConfig{Schema: a.db.Schema})
	require.NoError(t, err)
	s := newPruneScene(t, a, p)
	const all, guards = 30 + 30 + 25, 25 // the old claims, their finished events, their guards past every window
	require.Equal(t, all, s.requireKept(t, a))
	// The gate holds the third guard of the first batch, not the first:
	// a batch that committed row by row would leave two fewer.
	var third string
	require.NoError(t, a.db.Pool.QueryRow(t.Context(), `SELECT key FROM idempotency_guards WHERE key = ANY ($1)
ORDER BY scope, key OFFSET 2 LIMIT 1`, s.goneOld).Scan(&third))
	g := newTriggerGate(t, a.db, "DELETE", "idempotency_guards", "NOT DEFERRABLE FOR EACH ROW WHEN (OLD.key = '"+third+"')")

	// The process connects as a.db.Pool does: of its sessions, only the
	// process's wait at the gate and hold a transaction.
	w := startHelperProcess(t, "TestHelperPruner", helperPrunerPruned, a.db.URL, a.db.Schema)
	w.await(t, "the claims and the finished events pruned")
	g.awaitHeld(t, a, a.db.Schema)
	w.kill(t)

	rep, err := store.Prune(t.Context(), pruneSceneRetention)
	require.ErrorIs(t, err, idempotency.ErrPruneRunning, "the dead process's session holds its batch: %+v", rep)
	require.Zero(t, rep.Total())
	g.open(t)
	awaitNoTransaction(t, a.admin, a.db.Schema)
	require.Equal(t, guards, s.requireKept(t, a), "the killed batch of guards rolled back as a whole, the batches before it committed")

	rep, err = store.Prune(t.Context(), pruneSceneRetention)
	require.NoError(t, err)
	require.Equal(t, idempotency.PruneReport{Guards: guards}, rep)
	require.Zero(t, s.requireKept(t, a))
}

// TestHelperPruner is not a test: it is the process that TestPgxPruneKilled
// starts and kills. It runs PruneEvery with pruneSceneRetention and says
// when the claims and the finished events are pruned; its first batch of
// guards then waits at the test's gate until the process is killed.
func TestHelperPruner(t *testing.T) {
	_, store := helperWorkerStore(t, "TestPgxPruneKilled")
	r := pruneSceneRetention
	r.OnBatch = func(rep idempotency.PruneReport) {
		if rep == (idempotency.PruneReport{EventIDs: 30, Events: 30}) {
			fmt.Println(helperPrunerPruned)
		}
	}
	err := idempotency.PruneEvery(context.Background(), store, r, time.Hour, discardLogger())
	t.Fatalf("PruneEvery returned: %v", err)
}
