package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestInboxRunStopsIdleAtOnce: an idle Run returns as soon as its context
// is done, without waiting for what it would have waited for next: a poll
// (PollInterval an hour), or, listening on PostgreSQL, a notification on
// a pool whose connections' cancelled queries are cancelled by the server
// and cut only an hour later (pgconn.CancelRequestContextWatcherHandler
// with DeadlineDelay an hour; a DeadlineContextWatcherHandler with a
// DeadlineDelay is the same). The server does not cancel a wait for a
// notification, which runs no query: Run waited until the DeadlineDelay
// ran out. Both stores, listening and PollOnly; Run must return within
// recv's 10 s, and the listen connection is closed (its backend gone
// within 10 s: it exits after the close, not with it).
func TestInboxRunStopsIdleAtOnce(t *testing.T) {
	t.Parallel()
	for _, pollOnly := range []bool{false, true} {
		for _, name := range []string{"memory", "postgres"} {
			t.Run(name+map[bool]string{false: "/listen", true: "/poll-only"}[pollOnly], func(t *testing.T) {
				t.Parallel()
				var b *pgBackend
				var store idempotency.Store = idempotency.NewMemoryStore()
				if name == "postgres" {
					db := pgBackendSchemas.New(t, func(c *pgxpool.Config) {
						deliveryPool(c)
						c.ConnConfig.BuildContextWatcherHandler = func(conn *pgconn.PgConn) ctxwatch.Handler {
							return &pgconn.CancelRequestContextWatcherHandler{Conn: conn, DeadlineDelay: time.Hour}
						}
					})
					b = newPgBackendIn(t, db, idempotency.PgxConfig{}, func(p *pgxpool.Pool) idempotency.PgxBeginner { return p })
					store = b.store
				}
				inbox, err := idempotency.NewInbox(store, idempotency.NewHandlers(), idempotency.InboxConfig{
					PollOnly: pollOnly, PollInterval: time.Hour, Logger: discardLogger(),
				})
				require.NoError(t, err)
				ctx, stop := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- inbox.Run(ctx) }()
				if b != nil && !pollOnly {
					awaitListener(t, b, 0) // waiting for a notification
				}
				require.Eventually(t, func() bool { return idempotency.InboxIdle(inbox) }, 10*time.Second, time.Millisecond, "Run waits for the next poll")
				stop()
				require.NoError(t, recv(t, done, "Run after its context was done"))
				if b != nil {
					awaitNoListener(t, b)
				}
			})
		}
	}
}
