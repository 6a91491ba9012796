package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// unreachableConn is a connection that, while down is set, fails to send
// the statement that records an attempt's end (and, with listToo, the
// inbox's list, which looks a row up), as a database that cannot be
// reached fails them: nothing is sent.
type unreachableConn struct {
	net.Conn
	down, listToo *atomic.Bool
}

func (c *unreachableConn) Write(b []byte) (int, error) {
	if c.down.Load() && (bytes.Contains(b, []byte("SET state = $3, last_error = $4")) || // the settle's text
		c.listToo.Load() && bytes.Contains(b, []byte("cardinality($7::text[])"))) { // the list's
		_ = c.Conn.Close()
		return 0, errors.New("no route to host")
	}
	return c.Conn.Write(b)
}

// TestInboxUnrecordedLastAttemptReportedOnce: the last attempt of an
// event or a task fails while the database cannot be reached, so its
// end is not recorded; the row stays processing at that attempt, and the
// lease that finds it expired dead-letters it and reports the attempt
// (ErrLeaseExpired). The worker's end must not reach OnResult too:
// OnResult is called once per attempt, and a metric counting its calls
// counted that attempt twice. The worker's end is logged, and ends its
// Observer span marked as counted (ErrLeaseExpired, no state), as a hung
// worker's that returns after that lease; also when the worker cannot
// look the row up either (unreadable).
func TestInboxUnrecordedLastAttemptReportedOnce(t *testing.T) {
	t.Parallel()
	var down, listToo atomic.Bool
	db := wrappedConnsDB(t, func(conn net.Conn) net.Conn { return &unreachableConn{Conn: conn, down: &down, listToo: &listToo} },
		execMode) // every statement carries its text
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(t.Context()))
	for _, c := range []struct {
		kind       string
		unreadable bool
		ran        bool // the task's func returned nil: its effect happened
	}{{"event", false, false}, {"task", false, false}, {"event", true, false}, {"task", true, false}, {"task", false, true}} {
		kind := c.kind
		name := kind
		if c.unreadable {
			name += "/unreadable"
		}
		if c.ran {
			name += "/ran"
		}
		t.Run(name, func(t *testing.T) { // not parallel: they share down
			listToo.Store(c.unreadable)
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			failed := errors.New("provider down")
			hs := idempotency.NewHandlers()
			task := idempotency.NewTask(hs, "send-receipt", func(context.Context, idempotency.TaskRun[misuseArgs]) error {
				down.Store(true)
				if c.ran {
					return nil
				}
				return failed
			})
			idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
				if kind == "task" {
					_, err := task.Enqueue(ctx, tx, ev.Object.ID, misuseArgs{})
					return err
				}
				down.Store(true)
				return failed
			})
			var rs, observed misuseResults
			obs := &idempotency.Observer{Attempt: func(ctx context.Context, _ idempotency.InboxRecord, _ string) (context.Context, func(idempotency.Result)) {
				return ctx, observed.add
			}}
			log, buf := testLogger()
			inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
				Now: clock.Now, MaxAttempts: 1, Lease: time.Minute, Timeout: 10 * time.Second, Logger: log, OnResult: rs.add, Observer: obs,
			})
			require.NoError(t, err)
			eventID := "evt_unrecorded_" + strings.ReplaceAll(name, "/", "_")
			id := eventID
			if kind == "task" {
				h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Now: clock.Now})
				require.NoError(t, err)
				require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, invoicePayload(t, eventID, "in_"+eventID, "acct_1"), testSecret).Outcome)
				id = task.ID("in_" + eventID)
			} else {
				h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Now: clock.Now})
				require.NoError(t, err)
				require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, eventID, "in_"+eventID, "acct_1"), testSecret).Outcome)
			}

			n, err := inbox.WorkDue(t.Context()) // attempt 1 fails, and its end cannot be recorded
			require.NoError(t, err)
			require.Equal(t, 1, n)
			require.True(t, down.Swap(false), "the attempt ran")
			require.Contains(t, buf.String(), "cannot record an attempt")
			rec, ok, err := inbox.Lookup(t.Context(), id)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, idempotency.InboxProcessing, rec.State, "its end was not recorded")

			clock.Advance(time.Minute)
			n, err = inbox.WorkDue(t.Context()) // the lease finds it expired at its last attempt
			require.NoError(t, err)
			require.Zero(t, n)
			rec, _, err = inbox.Lookup(t.Context(), id)
			require.NoError(t, err)
			require.Equal(t, idempotency.InboxDeadLetter, rec.State)

			rs.mu.Lock()
			reported := append([]idempotency.Result(nil), rs.all...)
			rs.mu.Unlock()
			require.Len(t, reported, 1, "attempt 1 of %s reported to OnResult %d times: %v", id, len(reported), reported)
			require.Equal(t, 1, reported[0].Attempt)
			require.Equal(t, idempotency.InboxDeadLetter, reported[0].State)
			require.ErrorIs(t, reported[0].Err, idempotency.ErrLeaseExpired)

			observed.mu.Lock()
			defer observed.mu.Unlock()
			require.Len(t, observed.all, 2, "the worker's end and the lease's report")
			end := observed.all[0]
			require.Equal(t, 1, end.Attempt)
			require.Empty(t, end.State, "its end was not recorded")
			require.ErrorIs(t, end.Err, idempotency.ErrLeaseExpired, "counted by the lease")
			if c.ran {
				// Its last attempt: the lease dead-letters it, it does not
				// run again.
				require.Contains(t, end.Err.Error(), "task send-receipt ran, but its end was not recorded; "+
					"at its last attempt, it is dead-lettered when its lease expires")
			} else {
				require.ErrorIs(t, end.Err, failed)
			}
			require.Equal(t, idempotency.InboxDeadLetter, observed.all[1].State)
		})
	}
}
