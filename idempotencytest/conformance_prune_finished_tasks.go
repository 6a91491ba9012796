package idempotencytest

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testPruneTaskWindows: every finished task, processed or skipped, goes
// when Retention.Tasks has passed since it finished, and not at that very
// instant (a window keeps what is not older than it); a dead-lettered task
// is kept Tasks, when Tasks is longer than the event ids' and the dead
// letters' windows together, as documented on Retention.DeadLetters.
func testPruneTaskWindows(t *testing.T, b StoreBackend) {
	rs := retentionStore(t, b)
	clock := NewClock(taskStart)
	hs := idempotency.NewHandlers()
	probe := idempotency.NewTask(hs, "prune-probe", func(_ context.Context, run idempotency.TaskRun[string]) error {
		switch run.Key {
		case "skip":
			return idempotency.Skip("nothing to send")
		case "dead":
			return idempotency.Permanent(errors.New("refused for good"))
		}
		return nil
	})
	in := newInbox(t, b, hs, idempotency.InboxConfig{Now: clock.Now, Logger: slog.New(slog.DiscardHandler)})
	keys := []string{"done", "skip", "dead"}
	for _, key := range keys {
		c := claim("evt_ptw_" + key)
		c.ReceivedAt = clock.Now()
		_, err := b.Store.Run(ctxT(t), c, func(ctx context.Context, tx idempotency.Tx) error {
			_, err := probe.Enqueue(ctx, tx, key, key)
			return err
		})
		require.NoError(t, err)
	}
	n, err := in.WorkDue(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, len(keys), n)
	start := clock.Now()
	for key, want := range map[string]idempotency.InboxState{"done": idempotency.InboxProcessed, "skip": idempotency.InboxSkipped, "dead": idempotency.InboxDeadLetter} {
		r, ok, err := in.Lookup(ctxT(t), probe.ID(key))
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, want, r.State, key)
		require.True(t, start.Equal(r.FinishedAt), "%s finished on the inbox's clock", key)
	}
	tasks := func() []string {
		t.Helper()
		return listIDs(t, in, idempotency.InboxFilter{Kind: idempotency.KindTask})
	}
	all := []string{probe.ID("done"), probe.ID("skip"), probe.ID("dead")}

	// Tasks longer than the keys' window: the dead-lettered task is kept
	// as long as the finished ones.
	window := keysWindow + 30*24*time.Hour
	r := idempotency.Retention{Tasks: window}
	rep := prune(t, rs, r, start.Add(keysWindow+time.Hour))
	require.Zero(t, rep.Tasks+rep.DeadLetters, "Tasks has not passed: %+v", rep)
	require.ElementsMatch(t, all, tasks())

	// At the very end of the window nothing is older than it.
	rep = prune(t, rs, r, start.Add(window))
	require.Zero(t, rep.Tasks+rep.DeadLetters, "finished exactly Tasks ago is not older than Tasks: %+v", rep)
	require.ElementsMatch(t, all, tasks())

	// A microsecond later every one goes, the skipped one too.
	rep = prune(t, rs, r, start.Add(window+time.Microsecond))
	require.Equal(t, 2, rep.Tasks, "the processed and the skipped task: %+v", rep)
	require.Equal(t, 1, rep.DeadLetters, "the dead-lettered task: %+v", rep)
	require.Empty(t, tasks())
}
