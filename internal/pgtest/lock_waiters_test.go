package pgtest_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestLockWaitersReadsThroughOneSession: tests one after the other that
// read LockWaiters each count their own schema's session waiting on a
// lock, through one session of the binary's: a pool per test started and
// ended a session per test.
func TestLockWaitersReadsThroughOneSession(t *testing.T) {
	var pids []int32
	for i := range 3 {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			db := pgtest.New(t)
			ctx := t.Context()
			holder, err := db.Pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Release()
			if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended(current_schema(), 0))`); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() {
				_, err := db.Pool.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended(current_schema(), 0)), pg_advisory_unlock(hashtextextended(current_schema(), 0))`)
				waited <- err
			}()
			deadline := time.Now().Add(time.Minute)
			for {
				n, err := pgtest.LockWaiters(t, db.Schema)
				if err != nil {
					t.Fatal(err)
				}
				if n == 1 {
					break
				}
				if n > 1 || time.Now().After(deadline) {
					t.Fatalf("LockWaiters(%s) = %d, want 1", db.Schema, n)
				}
				time.Sleep(5 * time.Millisecond)
			}
			if n, err := pgtest.LockWaiters(t, "pgtest_no_such_schema"); err != nil || n != 0 {
				t.Fatalf("LockWaiters of another application = %d, %v; want 0", n, err)
			}
			if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock(hashtextextended(current_schema(), 0))`); err != nil {
				t.Fatal(err)
			}
			if err := <-waited; err != nil {
				t.Fatal(err)
			}
			rows, err := pgtest.AdminPool(t).Query(context.Background(),
				`SELECT pid FROM pg_stat_activity WHERE application_name = 'pgtest_waiters'`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var pid int32
				if err := rows.Scan(&pid); err != nil {
					t.Fatal(err)
				}
				pids = append(pids, pid)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
	slices.Sort(pids)
	if got := slices.Compact(pids); len(got) != 1 {
		t.Fatalf("LockWaiters read through sessions %v, want one for the three tests", got)
	}
}
