package idempotencytest_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine, instead of failing the test that made it.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestNewStoreRefusesAnotherSchema: a PgxConfig.Schema other than the
// test's would put the store's tables where other tests' are (by default
// "public"): NewStore fails the test, naming both schemas, and creates
// nothing there.
func TestNewStoreRefusesAnotherSchema(t *testing.T) {
	t.Parallel()
	db := idempotencytest.Postgres(t)
	publicTables := func() int {
		var n int
		require.NoError(t, db.Pool.QueryRow(t.Context(),
			`SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'idempotency\_%'`).Scan(&n))
		return n
	}
	before := publicTables()
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.NewStore(rec, idempotency.PgxConfig{Schema: "public"})
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("NewStore did not return within a minute")
	}
	require.Equal(t, fmt.Sprintf(`idempotencytest: NewStore: PgxConfig.Schema is "public"; leave it empty, the test's schema is %q`, db.Schema), rec.fatal)
	require.Equal(t, before, publicTables(), "tables created in public")
}
