package idempotency_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// newPgBackendWithSettings is newPgBackend on a pool whose sessions start
// with the server settings params, as a role or a database configured with
// ALTER ROLE/DATABASE ... SET would give them.
func newPgBackendWithSettings(t *testing.T, params map[string]string, configure func(*pgxpool.Config)) *pgBackend {
	t.Helper()
	db := pgtest.NewWithConfig(t, func(c *pgxpool.Config) {
		c.MaxConns = 24
		for k, v := range params {
			c.ConnConfig.RuntimeParams[k] = v
		}
		if configure != nil {
			configure(c)
		}
	})
	return newPgBackendIn(t, db, idempotency.PgxConfig{}, func(p *pgxpool.Pool) idempotency.PgxBeginner { return p })
}

// holdingWrite runs sql in a transaction of its own that it leaves open,
// then op on a goroutine, and commits once op waits for the row sql
// locked: op meets a conflicting write committed after it began.
func holdingWrite[T any](t *testing.T, b *pgBackend, sql string, op func() T) T {
	t.Helper()
	tx, err := b.db.Pool.Begin(t.Context())
	require.NoError(t, err)
	defer rollbackTx(tx)
	_, err = tx.Exec(t.Context(), sql)
	require.NoError(t, err)
	done := make(chan T, 1)
	go func() { done <- op() }()
	require.Eventually(t, func() bool { return b.waiting(t) == 1 }, time.Minute, time.Millisecond, "op waits for the row")
	require.NoError(t, tx.Commit(t.Context()))
	return recv(t, done, "op")
}

func rollbackTx(tx pgx.Tx) { _ = tx.Rollback(context.Background()) }

// TestPgxInboxAtServerDefaultIsolation: on a database or role whose
// default_transaction_isolation is repeatable read or serializable, the
// inbox's statements that run on their own (the ingest, an attempt's
// settle, Redrive) meet a conflicting write committed while they waited
// as at read committed. They inherited the default: a copy of an event
// whose first copy was being stored was answered 503, an attempt whose
// lease was taken over meanwhile logged that it could not be recorded
// instead of that it lost its lease, and Redrive failed, each with
// "could not serialize access due to concurrent update" (40001).
func TestPgxInboxAtServerDefaultIsolation(t *testing.T) {
	t.Parallel()
	for _, iso := range []string{"repeatable read", "serializable"} {
		t.Run(iso, func(t *testing.T) {
			t.Parallel()
			b := newPgBackendWithSettings(t, map[string]string{"default_transaction_isolation": iso}, nil)
			p := newPgInbox(t, b, idempotency.InboxConfig{})
			inbox := pgx.Identifier{b.db.Schema, "idempotency_inbox"}.Sanitize()

			// Ingest: the first copy is being stored by another replica.
			copy := pgInboxPayload(t, "evt_iso_copy", "in_iso_copy", 0)
			a := holdingWrite(t, b, `INSERT INTO `+inbox+` (event_id, event_type, created, payload, state, received_at, next_attempt_at)
VALUES ('evt_iso_copy', 'invoice.paid', now(), '\x7b7d', 'pending', now(), now())`, func() idempotencytest.Answer {
				return idempotencytest.Deliver(p.h, copy, testSecret)
			})
			require.Equal(t, http.StatusOK, a.Status, a.Body)
			require.Equal(t, idempotency.OutcomeDuplicate, a.Outcome)

			// Settle: the lease expired and another worker took it over.
			p.deliver(t, "evt_iso_settle", "in_iso_settle", 0)
			leased := p.lease(t, 1)
			type settled struct {
				ok  bool
				err error
			}
			s := holdingWrite(t, b, `UPDATE `+inbox+` SET attempt = attempt + 1 WHERE event_id = 'evt_iso_settle'`, func() settled {
				ok, err := idempotency.SettleLeased(t.Context(), p.inbox, leased[0], idempotency.InboxFailed, "boom")
				return settled{ok, err}
			})
			require.NoError(t, s.err)
			require.False(t, s.ok, "the fence finds the attempt taken over")

			// Redrive: an operator's tool touches the dead letter meanwhile.
			_, err := b.db.Pool.Exec(t.Context(), `UPDATE `+inbox+` SET state = 'dead_letter', finished_at = now() WHERE event_id = 'evt_iso_settle'`)
			require.NoError(t, err)
			type redriven struct {
				n   int
				err error
			}
			r := holdingWrite(t, b, `UPDATE `+inbox+` SET last_error = 'looked at' WHERE event_id = 'evt_iso_settle'`, func() redriven {
				n, err := p.inbox.Redrive(t.Context(), idempotency.RedriveFilter{EventIDs: []string{"evt_iso_settle"}})
				return redriven{n, err}
			})
			require.NoError(t, r.err)
			require.Equal(t, 1, r.n)
		})
	}
}
