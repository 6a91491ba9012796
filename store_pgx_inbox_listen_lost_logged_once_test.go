package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestPgxInboxListenLossLoggedOnce: while the database is down, Run's
// listen loop tries again every PollInterval. It warned "lost the
// notification connection" at every try, 3,600 lines an hour per
// process, where the lease says once that it cannot take events and once
// that it takes them again. It warns once per loss, and says when it
// listens again; the lease's two lines are counted too.
func TestPgxInboxListenLossLoggedOnce(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	var refused atomic.Int32
	pdb := pgtest.NewWithConfig(t, func(c *pgxpool.Config) {
		c.MaxConns = 24
		c.BeforeConnect = func(context.Context, *pgx.ConnConfig) error {
			if down.Load() {
				refused.Add(1)
				return errors.New("test: the database is down")
			}
			return nil
		}
		// While down, no pooled connection is handed out either.
		c.PrepareConn = func(context.Context, *pgx.Conn) (bool, error) { return !down.Load(), nil }
	})
	store, err := idempotency.NewPgxStore(pdb.Pool, idempotency.PgxConfig{Schema: pdb.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(t.Context()))
	b := &pgBackend{db: pdb, store: store}
	logger, logs := testLogger()
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[json.RawMessage]) error { return nil })
	inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{PollInterval: 10 * time.Millisecond, Logger: logger})
	require.NoError(t, err)
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	defer runInbox(t, inbox)()

	pid := awaitListener(t, b, 0)
	down.Store(true)
	terminate(t, pid)
	// The listen loop and the lease each try about every PollInterval.
	require.Eventually(t, func() bool { return refused.Load() >= 60 }, 30*time.Second, time.Millisecond,
		"connections refused while down")
	down.Store(false)
	pid = awaitListener(t, b, pid)
	require.Equal(t, 1, strings.Count(logs.String(), "lost the notification connection"), logs.String())
	count := func(msg string) func() int { return func() int { return strings.Count(logs.String(), msg) } }
	again, taking := count("listening for notifications again"), count("taking due events again")
	require.Eventually(t, func() bool { return again() == 1 && taking() == 1 }, 10*time.Second, time.Millisecond,
		"the listen loop and the lease say they work again:\n%s", logs)

	// A later lease that works, and a second loss with the database up:
	// each is said once more, the lease's recovery not at all.
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, "evt_relisten", "in_relisten", "acct_1"), testSecret).Outcome)
	require.Eventually(t, func() bool {
		rec, _, err := inbox.Lookup(t.Context(), "evt_relisten")
		return err == nil && rec.State == idempotency.InboxProcessed
	}, 10*time.Second, time.Millisecond, "the event is applied")
	terminate(t, pid)
	awaitListener(t, b, pid)
	require.Eventually(t, func() bool { return again() == 2 }, 10*time.Second, time.Millisecond, "listening again:\n%s", logs)
	require.Equal(t, 2, strings.Count(logs.String(), "lost the notification connection"), logs.String())
	require.Equal(t, 1, strings.Count(logs.String(), "cannot take due events"), logs.String())
	require.Equal(t, 1, taking(), logs.String())
}
