package idempotencytest_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// wrapper is a Store of a user's own that wraps one of the library's, as a
// metrics or logging decorator does: the runs that wait inside the store it
// wraps are out of its sight.
type wrapper struct{ idempotencytest.LookupStore }

func (w wrapper) Run(ctx context.Context, c idempotency.Claim, apply idempotency.ApplyFunc) (idempotency.Outcome, error) {
	return w.LookupStore.Run(ctx, c, apply)
}

// TestWaitingOfWrappedStore: RunStoreTests needs StoreBackend.Waiting, the
// runs blocked on another run's key, and a wrapper of a MemoryStore or a
// PgxStore could not count them: the suite then failed every case that
// waits, whatever the wrapper did. Waiting counts them in the store it
// wraps.
func TestWaitingOfWrappedStore(t *testing.T) {
	t.Parallel()
	stores := map[string]func(t *testing.T) idempotencytest.LookupStore{
		"memory": func(*testing.T) idempotencytest.LookupStore { return idempotency.NewMemoryStore() },
		"postgres": func(t *testing.T) idempotencytest.LookupStore {
			return idempotencytest.Postgres(t).NewStore(t, idempotency.PgxConfig{})
		},
		"postgres-no-recent-claims": func(t *testing.T) idempotencytest.LookupStore {
			return idempotencytest.Postgres(t).NewStore(t, idempotency.PgxConfig{RecentClaims: -1})
		},
	}
	for name, newStore := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			inner := newStore(t)
			store := wrapper{inner}
			waiting := idempotencytest.Waiting(inner)
			require.Equal(t, 0, waiting(t))

			claim := idempotency.Claim{EventID: "evt_held", EventType: "invoice.paid"}
			held, release := make(chan struct{}), make(chan struct{})
			holder := make(chan idempotency.Outcome, 1)
			go func() {
				out, _ := store.Run(context.Background(), claim, func(context.Context, idempotency.Tx) error {
					close(held)
					<-release
					return nil
				})
				holder <- out
			}()
			<-held
			copied := make(chan idempotency.Outcome, 1)
			go func() {
				out, _ := store.Run(context.Background(), claim, func(context.Context, idempotency.Tx) error { return nil })
				copied <- out
			}()
			deadline := time.Now().Add(10 * time.Second)
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for waiting(t) != 1 { // on the test's goroutine: Waiting may fail the test
				require.False(t, time.Now().After(deadline), "the copy waits for the holder")
				<-tick.C
			}
			close(release)
			require.Equal(t, idempotency.OutcomeProcessed, <-holder)
			require.Equal(t, idempotency.OutcomeDuplicate, <-copied)
			require.Equal(t, 0, waiting(t))
		})
	}
}

// TestWaitingRefusesWhatItCannotCount: Waiting of the wrapper itself, or of
// a PgxStore whose sessions it cannot tell apart from other tests', fails
// the test and says what to pass instead.
func TestWaitingRefusesWhatItCannotCount(t *testing.T) {
	t.Parallel()
	fatal := func(store idempotency.Store) string {
		rec := &fatalRecorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			idempotencytest.Waiting(store)(rec)
		}()
		<-done
		return rec.fatal
	}
	require.Equal(t, "idempotencytest.Waiting: idempotencytest_test.wrapper is neither a MemoryStore nor a PgxStore: pass the store yours wraps",
		fatal(wrapper{idempotency.NewMemoryStore()}))

	db := idempotencytest.Postgres(t)
	cfg, err := pgxpool.ParseConfig(db.URL)
	require.NoError(t, err)
	delete(cfg.ConnConfig.RuntimeParams, "application_name")
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.Equal(t, "idempotencytest.Waiting: the PgxStore is not on a Database's pool or URL: build it with Database.NewStore",
		fatal(store))

	conn, err := pgx.Connect(t.Context(), db.URL)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	store, err = idempotency.NewPgxStore(conn, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.Equal(t, 0, idempotencytest.Waiting(store)(t), "a connection opened with the URL is counted")
}

// The func Waiting returns may be called from any test that runs while
// the store is open, one after another: what it opens for its counting is
// not tied to the first of them.
func TestWaitingOutlivesTheTestThatFirstCalledIt(t *testing.T) {
	t.Parallel()
	db := idempotencytest.Postgres(t)
	store := db.NewStore(t, idempotency.PgxConfig{})
	waiting := idempotencytest.Waiting(store)
	for _, name := range []string{"first", "second"} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, 0, waiting(t))
		})
	}
}
