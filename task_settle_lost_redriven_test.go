package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// beforeListConn is an answerLostConn that calls before, once, as it
// sends the first inbox list once lost is set.
type beforeListConn struct {
	*answerLostConn
	lost   *atomic.Bool
	before func()
}

func (c *beforeListConn) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("cardinality($7::text[])")) && c.lost.CompareAndSwap(true, false) {
		c.before()
	}
	return c.answerLostConn.Write(b)
}

func (c *beforeListConn) Read(b []byte) (int, error) { return c.answerLostConn.Read(b) }

// settleLostStore is a PgxStore whose connections, once armed is set,
// lose the answer of the next settle (an attempt's end recorded, its
// client unaware), and call before, once, as they send the first inbox
// list after it: the attempt's look-up of its record.
func settleLostStore(t *testing.T, armed *atomic.Bool, before func()) *idempotency.PgxStore {
	t.Helper()
	var lost atomic.Bool
	settle := []byte("SET state = $3, last_error = $4") // the settle's text
	// In exec mode every statement carries its text: the settle is told
	// on whichever connection prepared it before.
	db := pgtest.NewWithConfig(t, func(c *pgxpool.Config) {
		execMode(c)
		dial := c.ConnConfig.DialFunc
		c.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			alc := &answerLostConn{Conn: conn, armed: armed, sent: func(b []byte) bool {
				if bytes.Contains(b, settle) && armed.Load() {
					lost.Store(true) // by this connection's Write, which loses the answer
					return true
				}
				return false
			}, answered: []byte("UPDATE 1\x00")}
			return &beforeListConn{answerLostConn: alc, lost: &lost, before: before}, nil
		}
	})
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(t.Context()))
	return store
}

// TestTaskSettleLostRedrivenNotReportedSnoozed: the UPDATE that
// dead-letters a task at its first attempt went through while its answer
// was lost, and an operator redrove the task before the attempt looked
// its record up: pending, its attempts counted from 0 again, its last
// attempt's time kept. That record is the redrive's, not the attempt's
// own snooze: the attempt is reported failed with its error, not
// snoozed.
func TestTaskSettleLostRedrivenNotReportedSnoozed(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	var in *idempotency.Inbox
	var redriven, runs atomic.Int64
	var redriveErr atomic.Value
	var redriveOnce sync.Once
	store := settleLostStore(t, &armed, func() {
		redriveOnce.Do(func() {
			n, err := in.Redrive(context.Background(), idempotency.RedriveFilter{Kind: idempotency.KindTask})
			redriven.Store(int64(n))
			redriveErr.Store(fmt.Sprint(err))
		})
	})

	refused := errors.New("provider refused")
	var h http.Handler
	var results *hookResults
	in, h, results = taskInbox(t, store, func(context.Context, idempotency.TaskRun[misuseArgs]) error {
		if runs.Add(1) == 1 {
			armed.Store(true)
		}
		return idempotency.Permanent(refused)
	})
	a := idempotencytest.Deliver(h, invoicePayload(t, "evt_task_redriven", "in_task_redriven", "acct_1"), testSecret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	_, err := in.WorkDue(t.Context()) // the event, which enqueues the task, and the task, which fails for good
	require.NoError(t, err)
	require.False(t, armed.Load(), "the dead-letter's settle was sent and its answer lost")
	require.Equal(t, "<nil>", redriveErr.Load())
	require.Equal(t, int64(1), redriven.Load(), "the task was redriven before the look-up")

	got := results.all()
	require.Len(t, got, 2)
	for name, got := range got {
		r := got[0] // the first attempt's, whose answer was lost
		require.Equal(t, idempotency.OutcomeFailed, r.Outcome, name)
		require.NotEqual(t, idempotency.InboxPending, r.State, name)
		require.ErrorIs(t, r.Err, refused, name)
		require.Equal(t, 1, r.Attempt, name)
	}
	require.Equal(t, int64(2), runs.Load(), "redriven, the task ran again in the same round")
}
