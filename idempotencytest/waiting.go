package idempotencytest

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
	"github.com/seed-a84bb619/idempotency/internal/waiters"
)

// Waiting returns a [StoreBackend.Waiting] for a Store of your own that
// wraps store: the runs blocked in store on an event claim or a guard that
// another run holds, which a wrapper cannot see. store is an
// [idempotency.MemoryStore], or an [idempotency.PgxStore] on the pool of a
// [Database] (made by [Database.NewStore]), or on a pool or connection
// opened with its URL: for it, the sessions of that schema waiting on a
// lock count too (not one whose NOTIFY's commit waits for those of other
// sessions). Any other store fails the test, as the wrapper itself does.
func Waiting(store idempotency.Store) func(t testing.TB) int {
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
		sessions, err := pgtest.LockWaiters(t, app)
		if err != nil {
			t.Fatalf("idempotencytest.Waiting: count the sessions waiting on a lock: %v", err)
		}
		return n + sessions
	}
}
