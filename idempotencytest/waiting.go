package idempotencytest

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
	"github.com/seed-a84bb619/idempotency/internal/waiters"
)

// Waiting returns a [StoreBackend.Waiting] for a Store of your own that
// wraps store: the runs blocked in store on an event claim or a guard that
// another run holds, which a wrapper cannot see. store is a
// idempotency.MemoryStore, or a idempotency.PgxStore on the pool of a
// [Database] (made by [Database.NewStore]), or on a pool or connection
// opened with its URL: for it, the sessions of that schema waiting on a
// lock count too. Any other store fails the test, as the wrapper itself
// does.
func Waiting(store idempotency.Store) func(t testing.TB) int {
	var mu sync.Mutex
	// admin is the pool each test that calls it counts on: opened at its
	// first call, closed when it ends, so that a test that calls it
	// later, or at once, is not left with a closed pool.
	admin := map[testing.TB]*pgxpool.Pool{}
	return func(t testing.TB) int {
		t.Helper()
		n, db, ok := waiters.Of(store)
		if !ok {
			t.Fatalf("idempotencytest.Waiting: %T is neither a MemoryStore nor a PgxStore: pass the store yours wraps", store)
		}
		if db == nil {
			return n
		}
		var app string
		switch db := db.(type) {
		case *pgxpool.Pool:
			app = db.Config().ConnConfig.RuntimeParams["application_name"]
		case *pgx.Conn:
			app = db.Config().RuntimeParams["application_name"]
		}
		if app == "" {
			t.Fatalf("idempotencytest.Waiting: the PgxStore is not on a Database's pool or URL: build it with Database.NewStore")
		}
		pool := func() *pgxpool.Pool {
			mu.Lock()
			defer mu.Unlock()
			if p := admin[t]; p != nil {
				return p
			}
			p := pgtest.AdminPool(t) // closed when t ends, after it is forgotten
			admin[t] = p
			t.Cleanup(func() {
				mu.Lock()
				defer mu.Unlock()
				delete(admin, t)
			})
			return p
		}()
		var sessions int
		if err := pool.QueryRow(context.Background(),
			`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND application_name = $1`, app).Scan(&sessions); err != nil {
			t.Fatalf("idempotencytest.Waiting: count the sessions waiting on a lock: %v", err)
		}
		return n + sessions
	}
}
