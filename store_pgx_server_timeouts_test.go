package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// serverTimeouts are a role's or database's timeouts, short, but long
// enough for the deliveries that must not be cut: with 300 ms, a loaded
// machine's delivery after the cut, its transaction idle or its statement
// slow for that long, was cut too, and a loaded machine's statements and
// the pauses between them take seconds: 10 s.
var serverTimeouts = map[string]string{"statement_timeout": "10s", "idle_in_transaction_session_timeout": "10s", "lock_timeout": "10s"}

// newPgBackendMigratedApart is newPgBackendWithSettings, but migrated
// through a pool without params: on a loaded machine the migration's
// transaction can sit idle past serverTimeouts'
// idle_in_transaction_session_timeout, which is not what the tests of
// handlers cut by the server are about.
func newPgBackendMigratedApart(t *testing.T, params map[string]string) *pgBackend {
	t.Helper()
	db := pgtest.NewWithConfig(t, func(c *pgxpool.Config) {
		c.MaxConns = 24
		for k, v := range params {
			c.ConnConfig.RuntimeParams[k] = v
		}
	})
	plain, err := pgxpool.New(t.Context(), db.URL)
	require.NoError(t, err)
	defer plain.Close()
	migrator, err := idempotency.NewPgxStore(plain, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	migratePgBackend(t, migrator, plain)
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	return &pgBackend{db: db, store: store}
}

// TestPgxServerTimeoutsFailTheAttempt: a handler whose statement outlasts
// statement_timeout, or that keeps its transaction idle past
// idle_in_transaction_session_timeout, is cut by the server: the delivery
// fails (500, the error saying which timeout), its writes and claim roll
// back, and the next delivery, or the inbox's next attempt after the
// backoff, applies the event once.
func TestPgxServerTimeoutsFailTheAttempt(t *testing.T) {
	t.Parallel()
	b := newPgBackendMigratedApart(t, serverTimeouts)
	admin := pgtest.AdminPool(t)
	// The handlers to cut find the connections' timeout in force in
	// their transaction (the store sets none of its own over it), then
	// lower it for that transaction alone (SET LOCAL, which the server
	// reads as it reads a role's or database's), so that the cut comes at
	// once rather than after serverTimeouts' 10 s, which every other
	// statement and transaction keeps.
	lower := func(ctx context.Context, tx pgx.Tx, setting string) error {
		var inForce string
		if err := tx.QueryRow(ctx, `SELECT current_setting($1)`, setting).Scan(&inForce); err != nil {
			return err
		}
		if inForce != serverTimeouts[setting] {
			return fmt.Errorf("%s in the handler's transaction is %s, not the connections' %s", setting, inForce, serverTimeouts[setting])
		}
		_, err := tx.Exec(ctx, `SELECT set_config($1, '100ms', true)`, setting)
		return err
	}
	cut := map[string]func(ctx context.Context, tx pgx.Tx) error{
		"statement timeout": func(ctx context.Context, tx pgx.Tx) error {
			if err := lower(ctx, tx, "statement_timeout"); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `SELECT pg_sleep(60)`)
			return err
		},
		"idle-in-transaction timeout": func(ctx context.Context, tx pgx.Tx) error {
			if err := lower(ctx, tx, "idle_in_transaction_session_timeout"); err != nil {
				return err
			}
			pid := tx.Conn().PgConn().PID()
			require.Eventually(t, func() bool {
				var n int
				require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&n))
				return n == 0
			}, time.Minute, 5*time.Millisecond, "the server ends the idle session")
			return nil
		},
	}
	var slow func(ctx context.Context, tx pgx.Tx) error
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[serviceObject]) error {
		if err := b.add(ctx, tx, ev.ID, 1); err != nil {
			return err
		}
		if slow != nil {
			return slow(ctx, idempotency.PgxTx(tx))
		}
		return nil
	})
	// The server cuts the attempts, not their Timeout: a minute, well past
	// serverTimeouts.
	const timeout = time.Minute
	var last idempotency.Result
	h, err := idempotency.NewHandler(b.store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(),
		Timeout: timeout, OnResult: func(r idempotency.Result) { last = r }})
	require.NoError(t, err)
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	in, err := idempotency.NewInbox(b.store, hs, idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger(),
		Timeout: timeout, Lease: 2 * timeout})
	require.NoError(t, err)
	ih, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Now: clock.Now})
	require.NoError(t, err)

	for what, fn := range cut {
		slow = fn
		sync, queued := "evt_sync "+what, "evt_inbox "+what
		payload := invoicePayload(t, sync, "in_sync", "acct_1")
		a := idempotencytest.Deliver(h, payload, testSecret)
		if what == "idle-in-transaction timeout" && a.Status == http.StatusServiceUnavailable {
			require.Equal(t, idempotency.OutcomeUnavailable, last.Outcome, "the session ended: lost, as requireCutBy says")
		} else {
			require.Equal(t, http.StatusInternalServerError, a.Status, a.Body)
		}
		require.Error(t, last.Err)
		requireCutBy(t, last.Err.Error(), what)
		require.Zero(t, b.get(t, sync), "rolled back")

		require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(ih, invoicePayload(t, queued, "in_inbox", "acct_1"), testSecret).Outcome)
		n, err := in.WorkDue(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		r, _, err := in.Lookup(t.Context(), queued)
		require.NoError(t, err)
		require.Equal(t, idempotency.InboxFailed, r.State)
		requireCutBy(t, r.LastError, what)
		require.Zero(t, b.get(t, queued), "rolled back")

		slow = nil
		require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, payload, testSecret).Outcome)
		clock.Set(r.NextAttemptAt)
		n, err = in.WorkDue(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Equal(t, idempotency.InboxProcessed, idempotencyLookupState(t, in, queued))
		require.Equal(t, 1, b.get(t, sync))
		require.Equal(t, 1, b.get(t, queued))
	}
}

// requireCutBy checks that msg, the error of an attempt the server cut,
// names the timeout what. The idle-in-transaction timeout ends the
// session: a COMMIT that reaches the closed socket before the client read
// the server's FATAL fails as the connection lost instead, which the
// store reports unavailable (a delivery then answered 503, not 500).
func requireCutBy(t *testing.T, msg, what string) {
	t.Helper()
	if what == "idle-in-transaction timeout" && !strings.Contains(msg, what) {
		require.Contains(t, msg, "store unavailable", "neither the timeout nor the lost connection")
		return
	}
	require.Contains(t, msg, what)
}

func idempotencyLookupState(t *testing.T, in *idempotency.Inbox, eventID string) idempotency.InboxState {
	t.Helper()
	r, ok, err := in.Lookup(t.Context(), eventID)
	require.NoError(t, err)
	require.True(t, ok)
	return r.State
}

// lockTimeout is the lock_timeout of TestPgxLockTimeoutSparesTheStoresOwnLocks.
const lockTimeout = "20ms"

// newPgBackendUnderLockTimeout is newPgBackendWithSettings under a
// lock_timeout of lockTimeout, on a schema migrated, with its counters
// table, before the setting applies (a pgBackendSchemas one). Creating
// tables waits for the catalogs now and then, while the package's other
// tests create and drop theirs: the set-up's DDL failed under 20 ms once
// in about fifteen runs beside the migration tests, which is not what
// the tests using this are about.
func newPgBackendUnderLockTimeout(t *testing.T) *pgBackend {
	t.Helper()
	db := pgBackendSchemas.New(t, func(c *pgxpool.Config) {
		c.MaxConns = 24
		c.ConnConfig.RuntimeParams["lock_timeout"] = lockTimeout
	})
	return newPgBackendIn(t, db, idempotency.PgxConfig{}, func(p *pgxpool.Pool) idempotency.PgxBeginner { return p })
}

// heldPastLockTimeout holds the advisory lock key (as
// hashtextextended(key, 0)) in a transaction while op runs on a
// goroutine, until op has waited for it three times lockTimeout (or
// returned), then releases it and returns what op returned.
func heldPastLockTimeout(t *testing.T, b *pgBackend, key string, op func() error) error {
	t.Helper()
	tx, err := b.db.Pool.Begin(t.Context())
	require.NoError(t, err)
	defer rollbackTx(tx)
	_, err = tx.Exec(t.Context(), `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, key)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- op() }()
	return releasedPastLockTimeout(t, b, tx, done)
}

// releasedPastLockTimeout commits tx, which holds a lock, once a statement
// has waited for a lock three times lockTimeout (or done has a value),
// and returns what done receives.
func releasedPastLockTimeout(t *testing.T, b *pgBackend, tx pgx.Tx, done <-chan error) error {
	t.Helper()
	admin := pgtest.AdminPool(t)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		if len(done) > 0 {
			return
		}
		var waited bool
		assert.NoError(c, admin.QueryRow(t.Context(), `SELECT coalesce(bool_or(clock_timestamp() - query_start > 3 * $2::interval), false)
FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, b.db.Schema, lockTimeout).Scan(&waited))
		assert.True(c, waited, "a statement waited for a lock three times lockTimeout")
	}, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, tx.Commit(t.Context()))
	return recv(t, done, "op")
}

// TestPgxPruneLockTimeoutSparesThePruneLock: a batch of Prune after the
// first waits for another replica's batch, under the prune lock, the
// store's own; a role's or database's lock_timeout does not cut that
// wait, as it failed the prune with "canceling statement due to lock
// timeout" whenever the other batch took longer.
func TestPgxPruneLockTimeoutSparesThePruneLock(t *testing.T) {
	t.Parallel()
	b := newPgBackendUnderLockTimeout(t)
	for i := range 2 {
		_, err := b.store.Run(t.Context(), idempotency.Claim{EventID: "evt_prune_lock_" + strconv.Itoa(i), EventType: "invoice.paid"}, nil)
		require.NoError(t, err)
	}
	other, err := b.db.Pool.Begin(t.Context())
	require.NoError(t, err)
	defer rollbackTx(other)
	held := make(chan error, 1)
	r := idempotency.Retention{
		BatchSize: 1, Pause: -1,
		Now: func() time.Time { return time.Now().Add(46 * 24 * time.Hour) },
		// Another replica's batch takes the lock after the first batch.
		OnBatch: func(rep idempotency.PruneReport) {
			if rep.Total() == 1 {
				_, err := other.Exec(context.Background(), `SELECT pg_advisory_xact_lock(hashtextextended('idempotency.prune:' || $1, 0))`, b.db.Schema)
				held <- err
			}
		},
	}
	var rep idempotency.PruneReport
	done := make(chan error, 1)
	go func() {
		var err error
		rep, err = b.store.Prune(t.Context(), r)
		done <- err
	}()
	require.NoError(t, recv(t, held, "the other batch's lock"))
	require.NoError(t, releasedPastLockTimeout(t, b, other, done))
	require.Equal(t, 2, rep.EventIDs)
}

// TestPgxLockTimeoutSparesTheStoresOwnLocks: a role's or database's
// lock_timeout, meant for the locks of business writes, does not cut the
// store's waits for its own advisory locks, which another process holds
// for as long as its lease or Migrate runs: the lease failed with
// "canceling statement due to lock timeout" whenever another process's
// lease took longer, and so did a replica's Migrate started while another
// migrated, although README says replicas can all run it at start.
func TestPgxLockTimeoutSparesTheStoresOwnLocks(t *testing.T) {
	t.Parallel()
	b := newPgBackendUnderLockTimeout(t)
	p := newPgInbox(t, b, idempotency.InboxConfig{})
	p.deliver(t, "evt_lock_timeout", "in_lock_timeout", 0)
	var leased []idempotency.InboxLeased
	err := heldPastLockTimeout(t, b, "idempotency.inbox.lease:"+b.db.Schema, func() (err error) {
		leased, err = idempotency.LeaseInbox(t.Context(), p.inbox, 10)
		return err
	})
	require.NoError(t, err)
	require.Len(t, leased, 1)

	err = heldPastLockTimeout(t, b, "idempotency.migrate:"+b.db.Schema, func() error { return b.store.Migrate(t.Context()) })
	require.NoError(t, err)
}

// TestPgxMigrateUnderLockTimeout: a migration's DDL waits for the
// transactions that use its table under the role's or database's
// lock_timeout, as users set it for: cut, Migrate fails naming the
// migration and the lock timeout, applies none of the pending
// migrations, and applies them all when run again. The lock_timeout is
// the README's for a deploy job's migration, 2 s: under 20 ms, the DDL
// of a run with no reader could wait for the catalogs longer, beside
// the package's other tests creating tables.
func TestPgxMigrateUnderLockTimeout(t *testing.T) {
	t.Parallel()
	db := pgtest.NewWithConfig(t, func(c *pgxpool.Config) { c.ConnConfig.RuntimeParams["lock_timeout"] = "2s" })
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, idempotency.PgxMigrateTo(t.Context(), store, 7))
	versions := func() int {
		var n int
		require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT max(version) FROM idempotency_migrations`).Scan(&n))
		return n
	}

	reader, err := db.Pool.Begin(t.Context())
	require.NoError(t, err)
	defer rollbackTx(reader)
	_, err = reader.Exec(t.Context(), `SELECT count(*) FROM idempotency_inbox`) // holds the table as a worker's read does
	require.NoError(t, err)
	err = store.Migrate(t.Context())
	require.ErrorContains(t, err, "migration 008_trace")
	require.ErrorContains(t, err, "lock timeout")
	require.Equal(t, 7, versions(), "nothing applied")

	require.NoError(t, reader.Commit(t.Context()))
	require.NoError(t, store.Migrate(t.Context()))
	files, err := filepath.Glob("migrations/*.up.sql")
	require.NoError(t, err)
	require.Equal(t, len(files), versions(), "all applied")
}
