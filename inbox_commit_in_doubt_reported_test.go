package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// answerLostConn is a connection to PostgreSQL that, once armed, sends
// the next statement that sent matches, and fails as a connection that
// dropped before the answer arrived when it reads the tag answered (the
// statement's CommandComplete): the statement took effect, and its client
// cannot tell.
type answerLostConn struct {
	net.Conn
	armed    *atomic.Bool
	sent     func([]byte) bool
	answered []byte
	losing   atomic.Bool
}

func (c *answerLostConn) Write(b []byte) (int, error) {
	if c.sent(b) && c.armed.CompareAndSwap(true, false) {
		c.losing.Store(true)
	}
	return c.Conn.Write(b)
}

func (c *answerLostConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if !c.losing.Load() || !bytes.Contains(b[:n], c.answered) {
		return n, err // what goes before the statement's answer (a prepare's) passes
	}
	_ = c.Conn.Close()
	return 0, io.ErrUnexpectedEOF
}

// answerLostStore is a PgxStore whose connections lose the answer of the
// first statement that sent matches once armed is set.
func answerLostStore(t *testing.T, armed *atomic.Bool, sent func([]byte) bool, answered string) *idempotency.PgxStore {
	t.Helper()
	db := wrappedConnsDB(t, func(conn net.Conn) net.Conn {
		return &answerLostConn{Conn: conn, armed: armed, sent: sent, answered: []byte(answered)}
	})
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(t.Context()))
	return store
}

// wrappedConnsDB is a throwaway database whose pool's connections are
// wrap's of the ones it dials, its pool's config changed by configure.
func wrappedConnsDB(t *testing.T, wrap func(net.Conn) net.Conn, configure ...func(*pgxpool.Config)) *pgtest.DB {
	t.Helper()
	return pgtest.NewWithConfig(t, func(c *pgxpool.Config) {
		dialWrapped(wrap)(c)
		for _, f := range configure {
			f(c)
		}
	})
}

// dialWrapped changes a pool's config so that its connections are wrap's
// of the ones it dials.
func dialWrapped(wrap func(net.Conn) net.Conn) func(*pgxpool.Config) {
	return func(c *pgxpool.Config) {
		dial := c.ConnConfig.DialFunc
		c.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return wrap(conn), nil
		}
	}
}

// lostAnswerInbox is an inbox on store with maxAttempts whose
// invoice.paid handler returns fail after arming armed, and the Results
// given to OnResult and to the Observer; an invoice.paid eventID is
// queued in it. A failed attempt is retried an hour later: with the
// default backoff, a second, a busy machine's WorkDue, slow to record the
// lost answer, found the retry due and made a second attempt.
func lostAnswerInbox(t *testing.T, store idempotency.Store, maxAttempts int, armed *atomic.Bool, fail error, eventID string) (in *idempotency.Inbox, results func() map[string][]idempotency.Result) {
	t.Helper()
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
		armed.Store(true)
		return fail
	})
	var mu sync.Mutex
	got := map[string][]idempotency.Result{}
	icfg := idempotency.InboxConfig{MaxAttempts: maxAttempts, Backoff: func(int) time.Duration { return time.Hour }, Logger: discardLogger(), OnResult: func(r idempotency.Result) {
		mu.Lock()
		defer mu.Unlock()
		got["OnResult"] = append(got["OnResult"], r)
	}}
	observeResults(&icfg, func(r idempotency.Result) {
		mu.Lock()
		defer mu.Unlock()
		got["Observer"] = append(got["Observer"], r)
	})
	in, err := idempotency.NewInbox(store, hs, icfg)
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, invoicePayload(t, eventID, "in_"+eventID, "acct_1"), testSecret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	return in, func() map[string][]idempotency.Result {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

// workLostAnswer makes the one attempt at eventID in in, whose statement
// armed loses the answer of, and returns the event's record.
func workLostAnswer(t *testing.T, in *idempotency.Inbox, armed *atomic.Bool, eventID string) idempotency.InboxRecord {
	t.Helper()
	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.False(t, armed.Load(), "the statement was sent and its answer lost")
	rec, ok, err := in.Lookup(t.Context(), eventID)
	require.NoError(t, err)
	require.True(t, ok)
	return rec
}

// TestInboxCommitLostReportedProcessed: an attempt whose COMMIT went
// through on PostgreSQL while its connection dropped before the answer
// (a terminated session, a network cut, the attempt's timeout) applied the
// event: the inbox shows it processed at that attempt. It is reported so,
// to OnResult and the Observer, once: not as failed with a lease lost to a
// newer attempt that never ran, which would count a failure the store
// does not show and no processed event the store does.
func TestInboxCommitLostReportedProcessed(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	store := answerLostStore(t, &armed, func(b []byte) bool { return bytes.Contains(b, []byte("commit")) }, "COMMIT\x00")
	in, results := lostAnswerInbox(t, store, 1, &armed, nil, "evt_commit_lost")

	rec := workLostAnswer(t, in, &armed, "evt_commit_lost")
	requireAttemptProcessed(t, rec, results())
}

// requireAttemptProcessed requires rec, the record of an event whose
// first attempt's COMMIT went through unanswered, to show it processed at
// that attempt, and got, what OnResult and the Observer were told, to be
// that, once each.
func requireAttemptProcessed(t *testing.T, rec idempotency.InboxRecord, got map[string][]idempotency.Result) {
	t.Helper()
	require.Equal(t, idempotency.InboxProcessed, rec.State, "the COMMIT went through")
	require.Equal(t, 1, rec.Attempt)
	require.Len(t, got, 2)
	for name, got := range got {
		require.Len(t, got, 1, name)
		r := got[0]
		require.Equal(t, idempotency.OutcomeProcessed, r.Outcome, "%s: %v", name, r.Err)
		require.Equal(t, idempotency.InboxProcessed, r.State, name)
		require.NoError(t, r.Err, name)
		require.Equal(t, 1, r.Attempt, name)
	}
}

// TestInboxSettleLostReportedAsRecorded: the UPDATE that records a failed
// attempt went through while its connection dropped before the answer;
// the store records it again on another connection, which finds it done.
// The attempt is reported failed with the state recorded, failed (and
// dead_letter at the last attempt, so that dead letters are counted), its
// handler's error, once: not as a lease lost to a newer attempt.
func TestInboxSettleLostReportedAsRecorded(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		maxAttempts int
		state       idempotency.InboxState
	}{{2, idempotency.InboxFailed}, {1, idempotency.InboxDeadLetter}} {
		t.Run(string(c.state), func(t *testing.T) {
			t.Parallel()
			var armed atomic.Bool
			settle := []byte("SET state = $3, last_error = $4") // the settle's text, sent to prepare it
			store := answerLostStore(t, &armed, func(b []byte) bool { return bytes.Contains(b, settle) }, "UPDATE 1\x00")
			fail := errors.New("downstream refused")
			in, results := lostAnswerInbox(t, store, c.maxAttempts, &armed, fail, "evt_settle_lost")
			rec := workLostAnswer(t, in, &armed, "evt_settle_lost")
			require.Equal(t, c.state, rec.State)
			require.Equal(t, 1, rec.Attempt)
			require.Equal(t, fail.Error(), rec.LastError)

			got := results()
			require.Len(t, got, 2)
			for name, got := range got {
				require.Len(t, got, 1, name)
				r := got[0]
				require.Equal(t, idempotency.OutcomeFailed, r.Outcome, name)
				require.Equal(t, c.state, r.State, "%s: %v", name, r.Err)
				require.ErrorIs(t, r.Err, fail, name)
				require.NotErrorIs(t, r.Err, idempotency.ErrLeaseLost, name)
				require.Equal(t, 1, r.Attempt, name)
			}
		})
	}
}

// TestInboxCommitInProgressReportedProcessed: an inbox attempt's COMMIT
// reached PostgreSQL and its answer was lost, while the transaction was
// still in progress (its COMMIT held by a deferred constraint trigger that
// waits for a lock). Recording the attempt failed waits for the row the
// transaction holds; once it commits, the record shows it processed at
// that attempt, and the attempt is reported processed, once.
func TestInboxCommitInProgressReportedProcessed(t *testing.T) {
	t.Parallel()
	var armed, cut atomic.Bool
	db := wrappedConnsDB(t, func(conn net.Conn) net.Conn { return &commitCutConn{Conn: conn, armed: &armed, cut: &cut} })
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(t.Context()))
	gate := newTriggerGate(t, db, "INSERT", "idempotency_events", "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW")
	in, results := lostAnswerInbox(t, store, 1, &armed, nil, "evt_commit_in_progress")

	worked := make(chan error, 1)
	go func() {
		_, err := in.WorkDue(t.Context())
		worked <- err
	}()
	// The COMMIT waits at the gate, and the attempt's settle for the row.
	faultAwait(t, 15*time.Second, "the COMMIT and the settle waiting", func() bool {
		n, err := pgtest.LockWaiters(t, db.Schema)
		return err == nil && n == 2
	})
	gate.open(t)
	require.NoError(t, <-worked)
	require.False(t, armed.Load(), "the COMMIT was sent and its answer lost")
	rec, ok, err := in.Lookup(t.Context(), "evt_commit_in_progress")
	require.NoError(t, err)
	require.True(t, ok)
	requireAttemptProcessed(t, rec, results())
}
