package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// unrecordedCase is an attempt whose end the database could not record.
type unrecordedCase struct {
	kind       string // event or task
	unreadable bool   // its worker cannot look the row up either
	ran        bool   // the task's func returned nil: its effect happened
}

func (c unrecordedCase) name() string {
	name := c.kind
	if c.unreadable {
		name += "/unreadable"
	}
	if c.ran {
		name += "/ran"
	}
	return name
}

// unrecordedAttempt is an inbox whose attempt 1 at an event or a task (c)
// ended while the database could not be reached: the row stays
// processing at it. Later runs succeed.
type unrecordedAttempt struct {
	inbox        *idempotency.Inbox
	clock        *idempotencytest.Clock
	id           string // the event's, or the task's
	failed       error  // what the first run returned, unless c.ran
	rs, observed misuseResults
	log          *syncBuffer
}

// newUnrecordedAttempt makes attempt 1 of case c on store, whose
// connections fail the settle while down is set (and the look-up, while
// listToo is), with maxAttempts.
func newUnrecordedAttempt(t *testing.T, store idempotency.Store, down, listToo *atomic.Bool, c unrecordedCase, maxAttempts int) *unrecordedAttempt {
	t.Helper()
	listToo.Store(c.unreadable)
	u := &unrecordedAttempt{clock: idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)), failed: errors.New("provider down")}
	var runs atomic.Int32
	firstRun := func() error { // the database goes down as the first run ends
		if runs.Add(1) > 1 {
			return nil
		}
		down.Store(true)
		if c.ran {
			return nil
		}
		return u.failed
	}
	hs := idempotency.NewHandlers()
	task := idempotency.NewTask(hs, "send-receipt", func(context.Context, idempotency.TaskRun[misuseArgs]) error { return firstRun() })
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		if c.kind == "task" {
			_, err := task.Enqueue(ctx, tx, ev.Object.ID, misuseArgs{})
			return err
		}
		return firstRun()
	})
	obs := &idempotency.Observer{Attempt: func(ctx context.Context, _ idempotency.InboxRecord, _ string) (context.Context, func(idempotency.Result)) {
		return ctx, u.observed.add
	}}
	var log *slog.Logger
	log, u.log = testLogger()
	var err error
	u.inbox, err = idempotency.NewInbox(store, hs, idempotency.InboxConfig{
		Now: u.clock.Now, MaxAttempts: maxAttempts, Lease: time.Minute, Timeout: 10 * time.Second, Logger: log,
		OnResult: u.rs.add, Observer: obs,
	})
	require.NoError(t, err)
	eventID := fmt.Sprintf("evt_unrecorded_%d_%s", maxAttempts, strings.ReplaceAll(c.name(), "/", "_"))
	u.id = eventID
	if c.kind == "task" {
		h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Now: u.clock.Now})
		require.NoError(t, err)
		require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, invoicePayload(t, eventID, "in_"+eventID, "acct_1"), testSecret).Outcome)
		u.id = task.ID("in_" + eventID)
	} else {
		h, err := u.inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Now: u.clock.Now})
		require.NoError(t, err)
		require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, eventID, "in_"+eventID, "acct_1"), testSecret).Outcome)
	}

	n, err := u.inbox.WorkDue(t.Context()) // attempt 1 ends, and its end cannot be recorded
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.True(t, down.Swap(false), "the attempt ran")
	unrecorded := logRecordsWith(t, u.log, "cannot record an attempt")
	require.Len(t, unrecorded, 1, u.log.String())
	if c.kind == "task" {
		requireNamesTask(t, unrecorded[0], u.id) // as every other line about a task
		require.Equal(t, "idempotency inbox: cannot record an attempt; the task is retried when its lease expires", unrecorded[0]["msg"],
			"a task is not an event")
	} else {
		require.Equal(t, u.id, unrecorded[0]["event_id"])
		require.Equal(t, "idempotency inbox: cannot record an attempt; the event is retried when its lease expires", unrecorded[0]["msg"])
	}
	require.Equal(t, idempotency.InboxProcessing, u.record(t).State, "its end was not recorded")
	return u
}

// record is the inbox record of the event or task.
func (u *unrecordedAttempt) record(t *testing.T) idempotency.InboxRecord {
	t.Helper()
	rec, ok, err := u.inbox.Lookup(t.Context(), u.id)
	require.NoError(t, err)
	require.True(t, ok)
	return rec
}

// reported is what OnResult was given so far.
func (u *unrecordedAttempt) reported() []idempotency.Result {
	u.rs.mu.Lock()
	defer u.rs.mu.Unlock()
	return append([]idempotency.Result(nil), u.rs.all...)
}

// requireWorkersEnd requires end, the Observer's done of attempt 1's
// worker, to say that its end was not recorded and that a lease counts
// it; a task's that ran, to say next: what comes of it.
func (u *unrecordedAttempt) requireWorkersEnd(t *testing.T, c unrecordedCase, end idempotency.Result, next string) {
	t.Helper()
	require.Equal(t, 1, end.Attempt)
	require.Empty(t, end.State, "its end was not recorded")
	require.ErrorIs(t, end.Err, idempotency.ErrLeaseExpired, "counted by the lease")
	if c.ran {
		require.Contains(t, end.Err.Error(), "task send-receipt ran, but its end was not recorded; "+next)
	} else {
		require.ErrorIs(t, end.Err, u.failed)
	}
}

// unreachableStore is a PostgreSQL store whose connections fail the
// settle while down is set, and the look-up too while listToo is.
func unreachableStore(t *testing.T) (store idempotency.Store, down, listToo *atomic.Bool) {
	t.Helper()
	down, listToo = new(atomic.Bool), new(atomic.Bool)
	db := wrappedConnsDB(t, func(conn net.Conn) net.Conn { return &unreachableConn{Conn: conn, down: down, listToo: listToo} },
		execMode) // every statement carries its text
	s, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(t.Context()))
	return s, down, listToo
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
	store, down, listToo := unreachableStore(t)
	for _, c := range []unrecordedCase{{"event", false, false}, {"task", false, false}, {"event", true, false}, {"task", true, false}, {"task", false, true}} {
		t.Run(c.name(), func(t *testing.T) { // not parallel: they share down
			u := newUnrecordedAttempt(t, store, down, listToo, c, 1)
			u.clock.Advance(time.Minute)
			n, err := u.inbox.WorkDue(t.Context()) // the lease finds it expired at its last attempt
			require.NoError(t, err)
			require.Zero(t, n)
			require.Equal(t, idempotency.InboxDeadLetter, u.record(t).State)

			reported := u.reported()
			require.Len(t, reported, 1, "attempt 1 of %s reported to OnResult %d times: %v", u.id, len(reported), reported)
			require.Equal(t, 1, reported[0].Attempt)
			require.Equal(t, idempotency.InboxDeadLetter, reported[0].State)
			require.ErrorIs(t, reported[0].Err, idempotency.ErrLeaseExpired)

			u.observed.mu.Lock()
			defer u.observed.mu.Unlock()
			require.Len(t, u.observed.all, 2, "the worker's end and the lease's report")
			// Its last attempt: the lease dead-letters it, it does not
			// run again.
			u.requireWorkersEnd(t, c, u.observed.all[0], "at its last attempt, it is dead-lettered when its lease expires")
			require.Equal(t, idempotency.InboxDeadLetter, u.observed.all[1].State)
		})
	}
}

// TestInboxUnrecordedAttemptBeforeTheLastReportedOnce: an attempt before
// the last fails (or a task's func ran) while the database cannot be
// reached, so its end is not recorded: the row stays processing at that
// attempt until the next lease takes it over. That attempt reports it as
// it starts (failed, State failed, ErrLeaseExpired), then its own end.
// The worker whose end was not recorded gave it to OnResult, with no
// state, as nobody else reported it; now its end is logged and ends its
// Observer span (ErrLeaseExpired, no state), and OnResult hears of that
// attempt once, from the take-over; also when the worker cannot look the
// row up either (unreadable).
func TestInboxUnrecordedAttemptBeforeTheLastReportedOnce(t *testing.T) {
	t.Parallel()
	store, down, listToo := unreachableStore(t)
	for _, c := range []unrecordedCase{{"event", false, false}, {"task", false, false}, {"event", true, false}, {"task", false, true}} {
		t.Run(c.name(), func(t *testing.T) { // not parallel: they share down
			u := newUnrecordedAttempt(t, store, down, listToo, c, 2)
			require.Empty(t, u.reported(), "attempt 1 is left to the lease that takes it over")
			u.clock.Advance(time.Minute)
			n, err := u.inbox.WorkDue(t.Context()) // attempt 2 takes attempt 1 over
			require.NoError(t, err)
			require.Equal(t, 1, n)
			require.Equal(t, idempotency.InboxProcessed, u.record(t).State)

			reported := u.reported()
			require.Len(t, reported, 2, "attempt 1, by the take-over, then attempt 2: %v", reported)
			require.Equal(t, 1, reported[0].Attempt)
			require.Equal(t, idempotency.OutcomeFailed, reported[0].Outcome)
			require.Equal(t, idempotency.InboxFailed, reported[0].State)
			require.ErrorIs(t, reported[0].Err, idempotency.ErrLeaseExpired)
			require.Equal(t, 2, reported[1].Attempt)
			require.Equal(t, idempotency.InboxProcessed, reported[1].State)

			u.observed.mu.Lock()
			defer u.observed.mu.Unlock()
			require.Len(t, u.observed.all, 3, "the worker's end, the take-over's report, attempt 2")
			u.requireWorkersEnd(t, c, u.observed.all[0], "it runs again when its lease expires")
		})
	}
}
