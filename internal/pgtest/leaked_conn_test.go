package pgtest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// cleanupRecorder is a testing.TB whose cleanups are run by the test that
// made it, and whose errors are recorded instead of failing that test.
type cleanupRecorder struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
	errs     []string
}

func (r *cleanupRecorder) Helper() {}

func (r *cleanupRecorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func (r *cleanupRecorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *cleanupRecorder) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// TestLeakedConnectionFailsTheTestInsteadOfHanging: a test that leaves one
// of its pool's connections acquired (a Rows never closed, a Tx never
// ended) used to hang its cleanup for ever in pgxpool.Pool.Close, and with
// it the whole test binary until -timeout. The cleanup now waits a bounded
// time, reports the leak as the test's error, terminates the schema's
// sessions and drops the schema.
func TestLeakedConnectionFailsTheTestInsteadOfHanging(t *testing.T) {
	defer pgtest.SetReleaseWait(100 * time.Millisecond)()
	ctx := context.Background()
	rec := &cleanupRecorder{TB: t}
	db := pgtest.New(rec)
	if _, err := db.Pool.Exec(ctx, "CREATE TABLE t (id int)"); err != nil {
		t.Fatal(err)
	}
	leaked, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer leaked.Release() // lets the cleanup's Close finish in the end

	rec.runCleanups()

	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], " 1 connection not released") ||
		!strings.Contains(rec.errs[0], db.Schema) {
		t.Fatalf("cleanup errors = %q, want one naming the schema and its 1 connection not released", rec.errs)
	}
	if schemaExists(t, db.Schema) {
		t.Fatalf("schema %s still exists after the cleanup", db.Schema)
	}
	if err := leaked.Ping(ctx); err == nil {
		t.Fatal("the leaked connection's session is still alive after the cleanup; want it terminated")
	}
}
