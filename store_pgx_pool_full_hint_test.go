package idempotency_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// poolFullHint is the clause a store operation's error gets when it
// timed out waiting for a connection of a pool of 2 all in use.
const poolFullHint = "(waited for a connection of the store's pool: all 2 of MaxConns in use; a handler that reads or writes " +
	"through another connection of the same pool, such as a *sql.DB from stdlib.OpenDBFromPool, holds two at once; " +
	"or more deliveries and workers at once than MaxConns)"

// holdPool acquires every connection of pool, and returns the func that
// releases them (also at the test's end).
func holdPool(t *testing.T, pool *pgxpool.Pool) (release func()) {
	t.Helper()
	var conns []*pgxpool.Conn
	for range pool.Config().MaxConns {
		c, err := pool.Acquire(t.Context())
		require.NoError(t, err)
		conns = append(conns, c)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			for _, c := range conns {
				c.Release()
			}
		})
	}
	t.Cleanup(release)
	return release
}

// TestPgxTimeoutWaitingForAPoolConnectionSaysSo: a delivery whose claim
// waited for a connection of the store's pool, every one of them in use
// (by handlers that read through a *sql.DB opened on the same pool, or
// more deliveries and workers than MaxConns), until Config.Timeout said
// only "context deadline exceeded". Its error says that it waited for a
// connection, how many the pool has, and what holds them; it is still
// ErrTimeout and context.DeadlineExceeded, answered 500 as before, and
// the event is applied once a connection is free. So do an inbox lease's
// and an inbox receiver's insert. A claim that timed out waiting for a
// row lock on a full pool, and a store whose db is not a pool, say
// nothing of a pool.
func TestPgxTimeoutWaitingForAPoolConnectionSaysSo(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	newBackend := func(t *testing.T, cfg idempotency.PgxConfig, db func(*pgxpool.Pool) idempotency.PgxBeginner) *pgBackend {
		pdb := pgtest.NewWithConfig(t, func(c *pgxpool.Config) { c.MaxConns = 2 })
		return newPgBackendIn(t, pdb, cfg, db)
	}
	pool := func(p *pgxpool.Pool) idempotency.PgxBeginner { return p }
	config := func(results chan<- idempotency.Result) (idempotency.Config, *syncBuffer) {
		logger, logs := testLogger()
		return idempotency.Config{
			Secrets: []string{testSecret}, Timeout: timeout, Logger: logger,
			OnResult: func(r idempotency.Result) { results <- r },
		}, logs
	}
	newHandler := func(t *testing.T, store idempotency.Store, results chan<- idempotency.Result) (http.Handler, *syncBuffer) {
		cfg, logs := config(results)
		h, err := idempotency.NewHandler(store, registry(), cfg)
		require.NoError(t, err)
		return h, logs
	}
	// deliverToAFullPool delivers payload to h while the test holds every
	// connection of the store's pool: answered status, its Result (of
	// outcome) and its log line say it waited for one; then again, to
	// patient, once the test released them. patient is h's store with the
	// default Timeout: the delivery that succeeds must not run into h's
	// 300 ms, which a loaded machine's claim and transaction outlast.
	deliverToAFullPool := func(t *testing.T, h, patient http.Handler, results <-chan idempotency.Result, logs *syncBuffer,
		release func(), payload []byte, status int, outcome idempotency.Outcome, what string,
	) idempotencytest.Answer {
		require.Equal(t, status, idempotencytest.Deliver(h, payload, testSecret).Status)
		r := recv(t, results, "the delivery's Result")
		require.Equal(t, outcome, r.Outcome)
		require.ErrorIs(t, r.Err, idempotency.ErrTimeout)
		require.ErrorIs(t, r.Err, context.DeadlineExceeded)
		require.ErrorContains(t, r.Err, what+": context deadline exceeded "+poolFullHint)
		require.Contains(t, logs.String(), what+": context deadline exceeded "+poolFullHint)
		release()
		return idempotencytest.Deliver(patient, payload, testSecret)
	}

	t.Run("synchronous", func(t *testing.T) {
		t.Parallel()
		b := newBackend(t, idempotency.PgxConfig{}, pool)
		results := make(chan idempotency.Result, 1)
		h, logs := newHandler(t, b.store, results)
		patient, err := idempotency.NewHandler(b.store, registry(), idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
		require.NoError(t, err)
		release := holdPool(t, b.db.Pool)
		payload := invoicePayload(t, "evt_pool_full", "in_pool_full", "acct_1")

		a := deliverToAFullPool(t, h, patient, results, logs, release, payload, http.StatusInternalServerError, idempotency.OutcomeFailed, "claiming event")
		require.Equal(t, idempotency.OutcomeProcessed, a.Outcome)
	})

	t.Run("a store whose db is not a pool", func(t *testing.T) {
		t.Parallel()
		b := newBackend(t, idempotency.PgxConfig{}, func(p *pgxpool.Pool) idempotency.PgxBeginner { return beginOnly{p} })
		results := make(chan idempotency.Result, 1)
		h, _ := newHandler(t, b.store, results)
		holdPool(t, b.db.Pool)

		require.Equal(t, http.StatusInternalServerError,
			idempotencytest.Deliver(h, invoicePayload(t, "evt_begin_only", "in_begin_only", "acct_1"), testSecret).Status)
		r := recv(t, results, "the delivery's Result")
		require.ErrorIs(t, r.Err, idempotency.ErrTimeout)
		require.ErrorContains(t, r.Err, "claiming event: context deadline exceeded")
		require.NotContains(t, r.Err.Error(), "MaxConns")
	})

	t.Run("a row lock on a full pool", func(t *testing.T) {
		t.Parallel()
		b := newBackend(t, idempotency.PgxConfig{RecentClaims: -1}, pool)
		claim := idempotency.Claim{EventID: "evt_locked", EventType: "invoice.paid"}
		held, done := make(chan struct{}), make(chan struct{})
		releaseClaim := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = b.store.Run(t.Context(), claim, func(context.Context, idempotency.Tx) error {
				close(held)
				<-releaseClaim
				return errors.New("rolled back")
			})
		}()
		recv(t, held, "the first claim")
		defer func() { close(releaseClaim); recv(t, done, "the first claim's end") }()
		// The second copy takes the pool's other connection and waits for
		// the first's row lock (TestPoolFullHintOnlyForAConnectionWait
		// fails such a statement on a pool that stays full).
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		defer cancel()
		_, err := b.store.Run(ctx, claim, func(context.Context, idempotency.Tx) error { return nil })
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NotContains(t, err.Error(), "MaxConns")
	})

	t.Run("an inbox lease", func(t *testing.T) {
		t.Parallel()
		b := newBackend(t, idempotency.PgxConfig{}, pool)
		in, clock, runs := queuedInvoice(t, b.store, idempotency.InboxConfig{Timeout: timeout}, "evt_pool_full_lease")
		release := holdPool(t, b.db.Pool)

		_, err := in.WorkDue(t.Context())
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorContains(t, err, "inbox lease: context deadline exceeded "+poolFullHint)
		require.Zero(t, runs.Load())

		// Another worker of the store, with the default Timeout: the
		// lease and the attempt that succeed must not run into in's
		// 300 ms, which a loaded machine's statements outlast.
		release()
		var patientRuns atomic.Int32
		hs := idempotency.NewHandlers()
		idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[map[string]any]) error {
			patientRuns.Add(1)
			return nil
		})
		patient, err := idempotency.NewInbox(b.store, hs, idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger()})
		require.NoError(t, err)
		n, err := patient.WorkDue(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Equal(t, int32(1), patientRuns.Load())
		require.Zero(t, runs.Load())
	})

	t.Run("an inbox receiver", func(t *testing.T) {
		t.Parallel()
		b := newBackend(t, idempotency.PgxConfig{}, pool)
		in, err := idempotency.NewInbox(b.store, registry(), idempotency.InboxConfig{Logger: discardLogger()})
		require.NoError(t, err)
		results := make(chan idempotency.Result, 1)
		cfg, logs := config(results)
		h, err := in.Handler(cfg)
		require.NoError(t, err)
		patient, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
		require.NoError(t, err)
		release := holdPool(t, b.db.Pool)
		payload := invoicePayload(t, "evt_pool_full_insert", "in_pool_full_insert", "acct_1")

		a := deliverToAFullPool(t, h, patient, results, logs, release, payload, http.StatusServiceUnavailable, idempotency.OutcomeUnavailable, "inbox enqueue")
		require.Equal(t, idempotency.OutcomeQueued, a.Outcome)
	})
}
