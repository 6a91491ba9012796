package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
	"github.com/seed-a84bb619/idempotency/internal/race"
)

// The tests in this file run the store behind a real PgBouncer in
// transaction pooling mode (see pgtest.Bouncer): each transaction may run
// on another server connection than the client's last, there is no
// search_path (every name is qualified with the schema), and the pools use
// pgx's QueryExecModeExec, as users behind PgBouncer before 1.21 must.

// bouncerBackend is a PgxStore reached through PgBouncer, in a schema of
// pgBackendSchemas: with a counters table written through PgxTx in the
// event's transaction.
type bouncerBackend struct {
	db       *pgtest.BouncerDB
	store    *idempotency.PgxStore
	counters string // the counters table, schema-qualified
}

func newBouncerBackend(t *testing.T, cfg idempotency.PgxConfig) *bouncerBackend {
	t.Helper()
	db := pgtest.PgBouncer(t).NewFrom(t, pgBackendSchemas, deliveryPool)
	cfg.Schema = db.Schema
	store, err := idempotency.NewPgxStore(db.Pool, cfg)
	require.NoError(t, err)
	require.NoError(t, store.Migrate(t.Context())) // migrated already: no DDL
	return &bouncerBackend{db: db, store: store, counters: pgx.Identifier{db.Schema, "counters"}.Sanitize()}
}

func (b *bouncerBackend) add(ctx context.Context, tx idempotency.Tx, name string, delta int) error {
	_, err := idempotency.PgxTx(tx).Exec(ctx,
		`INSERT INTO `+b.counters+` AS c (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = c.value + EXCLUDED.value`,
		name, delta)
	return err
}

func (b *bouncerBackend) get(t testing.TB, name string) int {
	var v int
	err := b.db.Pool.QueryRow(context.Background(), `SELECT value FROM `+b.counters+` WHERE name = $1`, name).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0
	}
	require.NoError(t, err)
	return v
}

// waiting counts the runs blocked on another run of the same key, as
// pgBackend.waiting does. PgBouncer sets a server connection's
// application_name to its client's for each transaction, so the sessions
// waiting on a lock for this test's clients carry the schema's name.
func (b *bouncerBackend) waiting(t testing.TB) int { return waitingRuns(t, b.db.Schema, b.store) }

func (b *bouncerBackend) conformance() idempotencytest.StoreBackend {
	return idempotencytest.StoreBackend{Store: b.store, Add: b.add, Get: b.get, Waiting: b.waiting}
}

// TestPgxBouncerConformance runs the store conformance suite through
// PgBouncer: with the in-process memory of claims, and without it, so that
// every wait for a held claim or guard happens in PostgreSQL on a server
// connection PgBouncer lent for the transaction.
func TestPgxBouncerConformance(t *testing.T) {
	t.Parallel()
	configs := map[string]idempotency.PgxConfig{
		"read-committed":               {},
		"read-committed/database-only": {RecentClaims: -1},
		"serializable/database-only":   {IsoLevel: pgx.Serializable, RecentClaims: -1},
	}
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			idempotencytest.RunStoreTests(t, func(t *testing.T) idempotencytest.StoreBackend {
				return newBouncerBackend(t, cfg).conformance()
			})
		})
	}
}

// bouncerApp is the seed scenario's service behind PgBouncer, run by
// several processes on one schema, each with its own pool and store:
// invoice.paid credits the account 100 once per invoice, in the claim's
// transaction. It records every Result and log line of every process, and
// how often the handler ran for each event.
type bouncerApp struct {
	db       *pgtest.BouncerDB
	stores   []*idempotency.PgxStore
	hs       *idempotency.Handlers
	accounts string // the accounts table, schema-qualified
	logger   *slog.Logger
	logs     *syncBuffer

	mu      sync.Mutex
	results []idempotency.Result
	runs    map[string]int // handler runs per event id, committed or not
}

func newBouncerApp(t *testing.T, processes int, cfg idempotency.PgxConfig) *bouncerApp {
	t.Helper()
	ctx := t.Context()
	db := pgtest.PgBouncer(t).New(t, deliveryPool)
	a := &bouncerApp{db: db, accounts: pgx.Identifier{db.Schema, "accounts"}.Sanitize(), runs: map[string]int{}}
	a.logger, a.logs = testLogger()
	cfg.Schema = db.Schema
	for i := range processes {
		pool := db.Pool
		if i > 0 {
			// Another process: its own pool, into the same PgBouncer pool.
			pcfg, err := pgxpool.ParseConfig(db.URL)
			require.NoError(t, err)
			pcfg.MaxConns = 24
			pool, err = pgxpool.NewWithConfig(ctx, pcfg)
			require.NoError(t, err)
			t.Cleanup(pool.Close)
		}
		store, err := idempotency.NewPgxStore(pool, cfg)
		require.NoError(t, err)
		a.stores = append(a.stores, store)
	}
	require.NoError(t, a.stores[0].Migrate(ctx))
	_, err := db.Pool.Exec(ctx, `CREATE TABLE `+a.accounts+` (id text PRIMARY KEY, credits bigint NOT NULL DEFAULT 0)`)
	require.NoError(t, err)

	a.hs = a.handlers(nil)
	return a
}

// handlers are the service's handlers: invoice.paid credits the account
// 100 once per invoice. hold, when not nil, is called inside the
// transaction after the credit, as a worker process that hangs there.
func (a *bouncerApp) handlers(hold func()) *idempotency.Handlers {
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		a.mu.Lock()
		a.runs[ev.ID]++
		a.mu.Unlock()
		first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID)
		if err != nil || !first {
			return err
		}
		_, err = idempotency.PgxTx(tx).Exec(ctx, `INSERT INTO `+a.accounts+` AS a (id, credits) VALUES ($1, 100)
ON CONFLICT (id) DO UPDATE SET credits = a.credits + 100`, ev.Object.Metadata["account_id"])
		if err == nil && hold != nil {
			hold()
		}
		return err
	})
	return hs
}

// config is the Handler configuration of every process.
func (a *bouncerApp) config() idempotency.Config {
	return idempotency.Config{Secrets: []string{testSecret}, Logger: a.logger, OnResult: a.record}
}

func (a *bouncerApp) record(res idempotency.Result) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.results = append(a.results, res)
}

func (a *bouncerApp) credits(t *testing.T, account string) int {
	t.Helper()
	var n int
	require.NoError(t, a.db.Pool.QueryRow(context.Background(),
		`SELECT coalesce(sum(credits), 0) FROM `+a.accounts+` WHERE id = $1`, account).Scan(&n))
	return n
}

// ledgerSize counts the committed event claims.
func (a *bouncerApp) ledgerSize(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, a.db.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM `+pgx.Identifier{a.db.Schema, "idempotency_events"}.Sanitize()).Scan(&n))
	return n
}

// requireClean fails the test if any delivery or attempt reported an
// error, or if any log line mentions a prepared statement: what pgx's
// default query mode produces behind PgBouncer.
func (a *bouncerApp) requireClean(t *testing.T) {
	t.Helper()
	a.requireCleanBut(t, "")
}

// requireCleanBut is requireClean, but for the report of attempt 1 of
// killed (when not ""), whose worker was killed: failed, ErrLeaseExpired,
// logged at Error, by the attempt that took it over.
func (a *bouncerApp) requireCleanBut(t *testing.T, killed string) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, res := range a.results {
		if killed != "" && res.EventID == killed && res.Attempt == 1 && errors.Is(res.Err, idempotency.ErrLeaseExpired) {
			continue
		}
		require.NoError(t, res.Err, "event %s (attempt %d)", res.EventID, res.Attempt)
	}
	logs := a.logs.String()
	require.NotContains(t, logs, "prepared statement")
	for line := range strings.Lines(logs) {
		if killed != "" && strings.Contains(line, `"event_id":"`+killed+`"`) && strings.Contains(line, `"attempt":1,`) &&
			strings.Contains(line, "idempotency: lease expired after attempt 1: ") {
			continue
		}
		require.NotContains(t, line, `"level":"ERROR"`)
	}
}

// roundRobin hands each request to the next of several processes'
// handlers, as a load balancer would.
type roundRobin struct {
	hs   []http.Handler
	next atomic.Uint64
}

func (rr *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rr.hs[(rr.next.Add(1)-1)%uint64(len(rr.hs))].ServeHTTP(w, r)
}

// deliverAll delivers every payload once to h from senders concurrent
// senders, and returns the answers in the payloads' order.
func deliverAll(h http.Handler, payloads [][]byte, senders int) idempotencytest.Answers {
	answers := make(idempotencytest.Answers, len(payloads))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(payloads) {
					return
				}
				answers[i] = idempotencytest.Deliver(h, payloads[i], testSecret)
			}
		})
	}
	wg.Wait()
	return answers
}

// TestPgxBouncerWebhooks runs the synchronous Handler of two processes
// behind PgBouncer, without the in-process memory of claims, so that every
// copy of an event contends for its claim in PostgreSQL.
func TestPgxBouncerWebhooks(t *testing.T) {
	t.Parallel()
	a := newBouncerApp(t, 2, idempotency.PgxConfig{RecentClaims: -1})
	rr := &roundRobin{}
	for _, store := range a.stores {
		h, err := idempotency.NewHandler(store, a.hs, a.config())
		require.NoError(t, err)
		rr.hs = append(rr.hs, h)
	}

	// 50 copies of one event at once: one runs, 49 are duplicates.
	answers := idempotencytest.Replay(rr, invoicePayload(t, "evt_bnc_copies", "in_bnc_copies", "acct_bnc_copies"), testSecret, 50)
	require.Equal(t, map[int]int{200: 50}, answers.Statuses())
	require.Equal(t, 1, answers.Count(idempotency.OutcomeProcessed))
	require.Equal(t, 49, answers.Count(idempotency.OutcomeDuplicate))
	require.Equal(t, 100, a.credits(t, "acct_bnc_copies"))

	// Ten twins at once: other event ids for one invoice. Each is
	// processed, the invoice is credited once.
	twins := make([][]byte, 10)
	for i := range twins {
		twins[i] = invoicePayload(t, fmt.Sprintf("evt_bnc_twin_%d", i), "in_bnc_twin", "acct_bnc_twins")
	}
	answers = deliverAll(rr, twins, len(twins))
	require.Equal(t, 10, answers.Count(idempotency.OutcomeProcessed), answers.Statuses())
	require.Equal(t, 100, a.credits(t, "acct_bnc_twins"))

	// 200 events of 200 invoices of 20 accounts, from 16 senders.
	const events, accounts = 200, 20
	payloads := make([][]byte, events)
	for i := range payloads {
		payloads[i] = invoicePayload(t, fmt.Sprintf("evt_bnc_%d", i), fmt.Sprintf("in_bnc_%d", i), fmt.Sprintf("acct_bnc_%d", i%accounts))
	}
	answers = deliverAll(rr, payloads, 16)
	require.Equal(t, events, answers.Count(idempotency.OutcomeProcessed), answers.Statuses())
	for i := range accounts {
		require.Equal(t, 100*events/accounts, a.credits(t, fmt.Sprintf("acct_bnc_%d", i)), "account %d", i)
	}
	require.Equal(t, 1+len(twins)+events, a.ledgerSize(t))
	a.mu.Lock()
	for i := range events {
		require.Equal(t, 1, a.runs[fmt.Sprintf("evt_bnc_%d", i)], "handler runs of event %d", i)
	}
	require.Equal(t, 1, a.runs["evt_bnc_copies"], "handler runs of the copied event")
	a.mu.Unlock()
	a.requireClean(t)
}

// TestPgxBouncerInbox runs the inbox of two processes behind PgBouncer
// with PollOnly (LISTEN does not work there): both ingest, both run
// workers, and every event is applied once.
func TestPgxBouncerInbox(t *testing.T) {
	t.Parallel()
	a := newBouncerApp(t, 2, idempotency.PgxConfig{})
	var inboxes []*idempotency.Inbox
	rr := &roundRobin{}
	applied := make([]atomic.Int32, len(a.stores)) // attempts per process
	for i, store := range a.stores {
		cfg := idempotency.InboxConfig{PollOnly: true, PollInterval: 100 * time.Millisecond, Logger: a.logger}
		observeResults(&cfg, func(res idempotency.Result) {
			applied[i].Add(1)
			a.record(res)
		})
		in, err := idempotency.NewInbox(store, a.hs, cfg)
		require.NoError(t, err)
		h, err := in.Handler(a.config())
		require.NoError(t, err)
		inboxes = append(inboxes, in)
		rr.hs = append(rr.hs, h)
	}
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var running sync.WaitGroup
	for _, in := range inboxes {
		running.Go(func() { assert.NoError(t, in.Run(ctx)) })
	}

	// 500 events: 400 invoices of 25 accounts, the last 100 of them paid
	// twice (a twin: another event id for the same invoice). Under -race,
	// where CI runs it, half of each: 250 events, 200 invoices, the last
	// 50 paid twice, 8 invoices an account.
	events, invoices, accounts := 500, 400, 25
	if race.Enabled {
		events, invoices = 250, 200
	}
	payloads := make([][]byte, events)
	for i := range payloads {
		inv := i % invoices
		payloads[i] = invoicePayload(t, fmt.Sprintf("evt_bnci_%d", i), fmt.Sprintf("in_bnci_%d", inv), fmt.Sprintf("acct_bnci_%d", inv%accounts))
	}
	answers := deliverAll(rr, payloads, 16)
	require.Equal(t, events, answers.Count(idempotency.OutcomeQueued), answers.Statuses())

	// Wait for the workers' effect.
	var stats idempotency.InboxStats
	deadline := time.Now().Add(60 * time.Second)
	for {
		var err error
		stats, err = inboxes[0].Stats(ctx)
		require.NoError(t, err)
		if stats.Counts[idempotency.InboxProcessed] == events {
			break
		}
		require.True(t, time.Now().Before(deadline), "not all events processed after 60s: %v", stats.Counts)
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	running.Wait()

	for st, n := range stats.Counts {
		if st != idempotency.InboxProcessed {
			require.Zero(t, n, "events %s", st)
		}
	}
	require.True(t, stats.OldestPending.IsZero())
	require.Equal(t, events, a.ledgerSize(t))
	for i := range accounts {
		require.Equal(t, 100*invoices/accounts, a.credits(t, fmt.Sprintf("acct_bnci_%d", i)), "account %d", i)
	}
	a.mu.Lock()
	for i := range events {
		require.Equal(t, 1, a.runs[fmt.Sprintf("evt_bnci_%d", i)], "handler runs of event %d", i)
	}
	attempts := 0
	for _, res := range a.results {
		if res.Attempt > 0 {
			attempts++
			require.Equal(t, idempotency.OutcomeProcessed, res.Outcome, "event %s", res.EventID)
		}
	}
	a.mu.Unlock()
	require.Equal(t, events, attempts, "one attempt per event")
	for i := range applied {
		require.NotZero(t, applied[i].Load(), "process %d applied no event", i)
	}
	a.requireClean(t)
}
