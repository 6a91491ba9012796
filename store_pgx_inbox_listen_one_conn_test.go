package idempotency_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// pollingOnlyLog closes its channel at the inbox's "polling only" record.
type pollingOnlyLog struct {
	slog.Handler
	once *sync.Once
	ch   chan struct{}
}

func (h pollingOnlyLog) Enabled(context.Context, slog.Level) bool { return true }

func (h pollingOnlyLog) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "polling only") {
		h.once.Do(func() { close(h.ch) })
	}
	return nil
}

// A store on a pool of one connection: Run's LISTEN would hold that
// connection for as long as Run runs, and every delivery, lease and
// attempt wait for it until it timed out (every delivery answered 503,
// nothing applied). Run polls instead, and says so.
func TestPgxInboxRunOnPoolOfOneConnection(t *testing.T) {
	t.Parallel()
	db := pgtest.NewWithConfig(t, func(c *pgxpool.Config) { c.MaxConns = 1 })
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(t.Context()))
	_, err = db.Pool.Exec(t.Context(), `CREATE TABLE counters (name text PRIMARY KEY, value bigint NOT NULL)`)
	require.NoError(t, err)
	b := &pgBackend{db: db, store: store}
	// The delivery's insert and the attempt wait for the one connection
	// and run within Timeout: the defaults' 10 s for the delivery, 10 s for
	// the attempt, which a loaded machine does not outlast (2 s it did).
	p := newPgInbox(t, b, idempotency.InboxConfig{Now: time.Now, PollInterval: 20 * time.Millisecond, Timeout: 10 * time.Second, Lease: 12 * time.Second})
	polling := make(chan struct{})
	p.cfg.Logger = slog.New(pollingOnlyLog{once: new(sync.Once), ch: polling})
	p.inbox = p.newInbox(t, store)
	h, err := p.inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- p.inbox.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-ran)
	}()
	require.Eventually(t, func() bool {
		select {
		case <-polling:
			return true
		default:
			return len(listeners(t, b)) == 1
		}
	}, 10*time.Second, 5*time.Millisecond, "Run listens or polls")

	a := idempotencytest.Deliver(h, pgInboxPayload(t, "evt_one_conn", "in_one_conn", 0), testSecret)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome)
	require.Eventually(t, func() bool {
		var v int
		err := pgtest.AdminPool(t).QueryRow(t.Context(), `SELECT coalesce(sum(value), 0) FROM `+quoteIdent(db.Schema)+`.counters WHERE name = 'in_one_conn'`).Scan(&v)
		require.NoError(t, err)
		return v == 1
	}, 10*time.Second, 5*time.Millisecond, "applied")
}
