package idempotency_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// chaosPayloads is the Retention.Payloads of TestPgxPruneTaskArgsChaos:
// short, so that tasks finish, and are cleared, while others run.
const chaosPayloads = 200 * time.Millisecond

// chaosPrunes is what the prunes of TestPgxPruneTaskArgsChaos reported,
// and the latest time their clock read.
type chaosPrunes struct {
	mu      sync.Mutex
	cleared int // TaskArgsCleared, summed over every prune, failed ones too
	runs    int
	failed  []error
	last    time.Time
}

func (c *chaosPrunes) now() time.Time {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = now
	return now
}

func (c *chaosPrunes) add(rep idempotency.PruneReport, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cleared += rep.TaskArgsCleared
	c.runs++
	if err != nil {
		c.failed = append(c.failed, err)
	}
}

// TestPgxPruneTaskArgsChaos: a process applies events that enqueue a
// send-receipt task per invoice (one in five a twin of the invoice before)
// and runs the tasks, while another prunes, prune after prune, in batches
// of 3 with Retention.Payloads of 200ms: tasks finish and their arguments
// are cleared while others are enqueued, leased and run. Meanwhile
// pg_terminate_backend ends the pruner's sessions or the worker's at
// random points (TestPgxPruneTaskArgsChaosSessionsTerminated), and here
// the server also crashes (immediate shutdown) and starts again mid-way.
//
// No prune fails for a terminated session: another connection is
// taken. Afterwards no event or task is lost or doubled: each event applied
// once, each task processed with one effect at the provider, whose call
// carried the task's arguments; no task has lost its arguments that was
// not finished longer than Payloads before a prune's clock; a prune then
// leaves no task finished before its cutoff with its arguments: nothing
// a prune cut mid-way left is left undone. The prunes' TaskArgsCleared
// add up to the tasks cleared: a batch whose COMMIT's answer was lost is
// looked up and counted, and only when the look-up fails too (the server
// crashed as the COMMIT was flushed) may the totals after a crash be
// short, never over.
func TestPgxPruneTaskArgsChaos(t *testing.T) {
	t.Run("database-crashed", func(t *testing.T) {
		cluster := pgtest.Server(t) // not parallel: it stops the shared server
		taskArgsChaos(t, cluster)
	})
}

// TestPgxPruneTaskArgsChaosSessionsTerminated is TestPgxPruneTaskArgsChaos
// with sessions ended alone, the server left running. Apart from it,
// which is not parallel, so that it runs beside the other parallel tests:
// go test runs the tests that are not parallel, and their subtests,
// first, one after another.
func TestPgxPruneTaskArgsChaosSessionsTerminated(t *testing.T) {
	t.Parallel()
	taskArgsChaos(t, nil)
}

func taskArgsChaos(t *testing.T, cluster *pgtest.Cluster) {
	ctx := t.Context()
	a := newTaskApp(t)
	a.withReceipts(a.db.Pool, nil)
	url := a.db.URL
	if cluster != nil {
		url = cluster.TCP(t, a.db.URL)
	}
	w := a.processOn(t, "worker", url, idempotency.InboxConfig{
		Lease: faultLease, Timeout: faultTimeout, PollInterval: 100 * time.Millisecond, Backoff: faultBackoff,
	})
	pr := a.processOn(t, "pruner", url, idempotency.InboxConfig{})
	store, err := idempotency.NewPgxStore(pr.pool, idempotency.PgxConfig{Schema: a.db.Schema})
	require.NoError(t, err)
	prunes := &chaosPrunes{}
	r := idempotency.Retention{Payloads: chaosPayloads, BatchSize: 3, Pause: -1, Now: prunes.now}

	w.run(t)
	events := faultEvents("chaos", 240, 5)
	invoices := len(events) - len(events)/5
	tr := a.startAll(t, []http.Handler{w.handler}, events, 4)

	stopPruning := make(chan struct{})
	pruned := make(chan struct{})
	go func() {
		defer close(pruned)
		for {
			select {
			case <-stopPruning:
				return
			default:
			}
			rep, err := store.Prune(context.Background(), r)
			prunes.add(rep, err)
			if err != nil {
				time.Sleep(faultResendPause) // as a PruneEvery would, not at once against a database that is down
			}
		}
	}()
	t.Cleanup(func() {
		select {
		case <-stopPruning:
		default:
			close(stopPruning)
		}
		<-pruned
	})

	seed := rand.Uint64()
	t.Logf("chaos seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	terminated := map[string]int{}
	crashed := false
	for round := range 40 {
		time.Sleep(time.Duration(rng.IntN(25)) * time.Millisecond) // a random point in the traffic and the prunes
		victim := []*faultProc{w, pr}[rng.IntN(2)]
		if n, err := a.tryTerminateSessions(ctx, victim); err == nil {
			terminated[victim.name] += n
		}
		// The crash comes while most of the traffic is still to send: at
		// round 20, the senders of a fast machine had sent every event,
		// and no delivery was left to be refused.
		if cluster != nil && !crashed && (round == 20 || tr.accepted.Load() >= int64(len(events)/3)) {
			crashed = true
			refused := tr.refusedTotal()
			cluster.Kill(t)
			faultAwait(t, 30*time.Second, "a delivery refused while the server is down", func() bool { return tr.refusedTotal() > refused })
			cluster.Start(t)
		}
	}
	tr.wg.Wait()
	require.Len(t, tr.sent, len(events))
	a.awaitInbox(t, 2*time.Minute, "every task processed, nothing left to apply", func(st idempotency.InboxStats) bool {
		return st.TaskCounts[idempotency.InboxProcessed] == invoices &&
			st.Counts[idempotency.InboxPending]+st.Counts[idempotency.InboxProcessing]+st.Counts[idempotency.InboxFailed] == 0
	})
	// The prunes go on until one has cleared a task's arguments: when the
	// last tasks finished together, as those a terminated session left to
	// their lease do, none may have been finished Payloads before a
	// prune's clock yet.
	faultAwait(t, 30*time.Second, "a task's arguments cleared by the prunes", func() bool {
		var n int
		err := a.db.Pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_inbox WHERE kind = 'task' AND payload = ''`).Scan(&n)
		return err == nil && n > 0
	})
	close(stopPruning)
	<-pruned
	w.stop()
	t.Logf("%d prunes, %d failed (first: %v); sessions terminated: %v; answers by status %v",
		prunes.runs, len(prunes.failed), firstErr(prunes.failed), terminated, tr.statuses)
	if cluster == nil {
		require.Empty(t, prunes.failed, "a session that ended is another connection away")
	}
	for _, err := range prunes.failed {
		require.ErrorIs(t, err, idempotency.ErrStoreUnavailable)
	}

	a.requireAppliedOnce(t, events)
	a.requireReceipts(t, events)
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		require.NoError(t, a.db.Pool.QueryRow(ctx, q, args...).Scan(&n), q)
		return n
	}
	require.Zero(t, count(`SELECT count(*) FROM idempotency_inbox WHERE kind = 'event' AND state NOT IN ('processed', 'skipped', 'ignored')`),
		"events left unfinished")
	require.Zero(t, count(`SELECT count(*) FROM idempotency_inbox WHERE kind = 'task' AND payload = ''
    AND (state NOT IN ('processed', 'skipped') OR finished_at >= $1)`, prunes.last.Add(-chaosPayloads)),
		"tasks whose arguments were cleared before they were finished %v before a prune's clock", chaosPayloads)
	cleared := count(`SELECT count(*) FROM idempotency_inbox WHERE kind = 'task' AND payload = ''`)
	require.Positive(t, cleared, "no task's arguments were cleared during the trial")

	// One prune, on its own: whatever a cut one left is done.
	rep, err := store.Prune(ctx, r)
	require.NoError(t, err)
	prunes.add(rep, nil)
	cutoff := prunes.last.Add(-chaosPayloads)
	require.Zero(t, count(`SELECT count(*) FROM idempotency_inbox WHERE kind = 'task' AND payload <> '' AND finished_at < $1`, cutoff),
		"tasks finished before the cutoff still holding their arguments")
	require.Zero(t, count(`SELECT count(*) FROM idempotency_inbox WHERE kind = 'event' AND finished_at < $1`, cutoff),
		"finished events before the cutoff still stored")

	// Once every task finished longer than Payloads ago, every one is cleared.
	later := idempotency.Retention{Payloads: chaosPayloads, BatchSize: 3, Pause: -1, Now: func() time.Time { return prunes.last.Add(time.Hour) }}
	rep, err = store.Prune(ctx, later)
	require.NoError(t, err)
	prunes.add(rep, nil)
	cleared = count(`SELECT count(*) FROM idempotency_inbox WHERE kind = 'task' AND payload = ''`)
	require.Equal(t, invoices, cleared, "every task cleared")
	t.Logf("TaskArgsCleared over %d prunes: %d, tasks cleared: %d", prunes.runs, prunes.cleared, cleared)
	if cluster == nil {
		require.Equal(t, cleared, prunes.cleared, "each cleared task reported once")
	} else {
		require.LessOrEqual(t, prunes.cleared, cleared, "a cleared task reported twice")
	}
}

// refusedTotal is how many answers were not 2xx, every sender's.
func (tr *faultTraffic) refusedTotal() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, r := range tr.refused {
		n += r
	}
	return n
}

// firstErr is errs[0], or nil.
func firstErr(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errs[0]
}
