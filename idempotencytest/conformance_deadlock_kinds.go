package idempotencytest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// The deadlocks of the other keys a transaction takes, as
// testDeadlockRetried crosses guards: a task's (task, key), and a
// CheckOrder record, alone or with a guard. Each is a row PostgreSQL locks
// until the transaction ends, so two handlers that take two of them in
// opposite orders deadlock there; the store must break the cycle and run
// the victim again, as it does for guards, on every store alike.

// taskKeys are keys enqueued as tb's receipt task; stored requires the
// task in the inbox, pending.
func taskKeys(tb *taskBench) deadlockKeys {
	return deadlockKeys{
		take: func(ctx context.Context, tx idempotency.Tx, key string) (bool, error) {
			return tb.receipt.Enqueue(ctx, tx, key, receiptArgs{Invoice: key})
		},
		stored: func(t *testing.T, key string) {
			require.Equal(t, idempotency.InboxPending, tb.task(t, key).State, "the task of key %s", key)
		},
	}
}

// testTaskDeadlockRetried crosses two transactions' task enqueues.
func testTaskDeadlockRetried(t *testing.T, b StoreBackend) {
	testDeadlockRetried(t, b, 2, taskKeys(newTaskBench(t, b, idempotency.InboxConfig{})))
}

// testTaskAndGuardDeadlockRetried crosses a guard (key a) and a task
// enqueue (key b): one transaction takes the guard first, the other the
// task.
func testTaskAndGuardDeadlockRetried(t *testing.T, b StoreBackend) {
	guards, tasks := guardKeys(b), taskKeys(newTaskBench(t, b, idempotency.InboxConfig{}))
	testDeadlockRetried(t, b, 2, deadlockKeys{
		take: func(ctx context.Context, tx idempotency.Tx, key string) (bool, error) {
			if key == "a" {
				return guards.take(ctx, tx, key)
			}
			return tasks.take(ctx, tx, key)
		},
		stored: func(t *testing.T, key string) {
			if key == "a" {
				guards.stored(t, key)
			} else {
				tasks.stored(t, key)
			}
		},
	})
}

// testCheckOrderDeadlockRetried crosses two transactions' CheckOrder
// records of one second: the first to check a key finds it newer; the
// victim, run again after the other committed, a tie.
func testCheckOrderDeadlockRetried(t *testing.T, b StoreBackend) {
	testDeadlockRetried(t, b, 2, deadlockKeys{
		take: func(ctx context.Context, tx idempotency.Tx, key string) (bool, error) {
			o, err := idempotency.CheckOrder(ctx, tx, "k", key, time.Unix(1756742400, 0))
			return o == idempotency.OrderNewer, err
		},
	})
}
