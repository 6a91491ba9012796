package idempotencytest

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testTaskRunsAfterItsTransactionsWrites: a task is never run before the
// writes of the transaction that enqueued it can be read. A worker that
// looks for due tasks while that transaction ends, as its AfterCommit
// funcs run (here one registered before the handler's write, which runs
// WorkDue as another process's worker would lease at that moment), finds
// the task not due yet, or runs it with the write there: on PostgreSQL
// the write committed with the task; MemoryStore, whose fakes apply
// their writes from AfterCommit funcs, keeps the task from the workers
// until those funcs have run, as it keeps the claim, the guards and the
// task keys. A task func that reads what its event wrote (an id in its
// arguments, the rest read when it runs) reads it on both stores.
func testTaskRunsAfterItsTransactionsWrites(t *testing.T, b StoreBackend) {
	clock := NewClock(taskStart)
	hs := idempotency.NewHandlers()
	var read []int // the counter, as each run of the task read it
	task := idempotency.NewTask(hs, "read-what-was-written", func(context.Context, idempotency.TaskRun[receiptArgs]) error {
		read = append(read, b.Get(t, "c")) // every run is on the test's goroutine: WorkDue's
		return nil
	})
	in := newInbox(t, b, hs, idempotency.InboxConfig{Now: clock.Now, Logger: slog.New(slog.DiscardHandler)})
	c := claim("evt_task_after_writes")
	c.ReceivedAt = clock.Now()
	ranDuring := 0
	_, err := b.Store.Run(ctxT(t), c, func(ctx context.Context, tx idempotency.Tx) error {
		tx.AfterCommit(func(ctx context.Context) {
			n, err := in.WorkDue(ctx)
			require.NoError(t, err)
			ranDuring = n
		})
		if err := b.Add(ctx, tx, "c", 1); err != nil {
			return err
		}
		_, err := task.Enqueue(ctx, tx, "in_after_writes", receiptArgs{Invoice: "in_after_writes"})
		return err
	})
	require.NoError(t, err)
	ranAfter, err := in.WorkDue(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, 1, ranDuring+ranAfter, "the task ran once")
	require.Equal(t, []int{1}, read, "the task read the counter as its transaction wrote it")
	rec, ok, err := in.Lookup(ctxT(t), task.ID("in_after_writes"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, idempotency.InboxProcessed, rec.State)
}
