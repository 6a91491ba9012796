package idempotency_test

import (
	"bytes"
	"net"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// commitFatalConn is a connection to PostgreSQL that, once armed, answers
// the next COMMIT, which the server carried out, with the FATAL error of a
// session ended as it waited for synchronous replication after committing
// locally (pg_terminate_backend, a fast shutdown), and closes.
type commitFatalConn struct {
	net.Conn
	armed  *atomic.Bool
	losing atomic.Bool
}

func (c *commitFatalConn) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("commit")) && c.armed.CompareAndSwap(true, false) {
		c.losing.Store(true)
	}
	return c.Conn.Write(b)
}

func (c *commitFatalConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if !c.losing.Load() || !bytes.Contains(b[:n], []byte("COMMIT\x00")) {
		return n, err
	}
	_ = c.Conn.Close()
	fatal, encErr := (&pgproto3.ErrorResponse{
		Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P01",
		Message: "terminating connection due to administrator command",
	}).Encode(nil)
	if encErr != nil {
		return 0, encErr
	}
	return copy(b, fatal), nil
}

// TestHandlerCommitFatalAnsweredProcessed: the session of an event's
// transaction was ended (FATAL 57P01) once its COMMIT went through, as
// PostgreSQL does when it terminates a session that waits for synchronous
// replication. The server's error does not tell that nothing was
// committed: the store finds the claim committed, the delivery is answered
// 200 processed and reported once; Stripe's resend is a duplicate.
func TestHandlerCommitFatalAnsweredProcessed(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	db := wrappedConnsDB(t, func(conn net.Conn) net.Conn { return &commitFatalConn{Conn: conn, armed: &armed} })
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(t.Context()))
	h, results := commitLostHandler(t, store, &armed)
	payload := invoicePayload(t, "evt_sync_commit_fatal", "in_sync_commit_fatal", "acct_1")

	a := idempotencytest.Deliver(h, payload, testSecret)
	require.False(t, armed.Load(), "the COMMIT was sent and answered FATAL")
	requireCommittedOnce(t, h, store, payload, "evt_sync_commit_fatal", a, results)
}
