package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestShowHeldByOnAReadOnlyConnection: on a connection that may not
// write, where Inbox.HeldBy cannot probe row locks, show still prints the
// event's record and ledger record, says that what holds it back could
// not be read (held_by null and held_by_error with -json), and exits 0.
func TestShowHeldByOnAReadOnlyConnection(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)
	s.deliver(t, "evt_ro_fails", "charge.failed", "ch_ro")
	s.work(t, s.inbox)
	s.deliver(t, "evt_ro_waits", "invoice.paid", "ch_ro")
	env := map[string]string{"DATABASE_URL": pgtest.WithOptions(s.db.URL, "-c default_transaction_read_only=on")}

	r := idemctl(t, s.db, env, "show", "evt_ro_waits")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^  state\s+pending$`, r.stdout)
	require.Regexp(t, `(?m)^  held by\s+\? \(could not be read: .*read-only transaction.*\)$`, r.stdout)
	require.Contains(t, r.stderr, "idemctl: show: what holds evt_ro_waits back could not be read: ")

	r = idemctl(t, s.db, env, "show", "-json", "evt_ro_waits")
	require.Equal(t, 0, r.code, r.stderr)
	doc := decode[showJSON](t, r)
	require.NotNil(t, doc.Inbox)
	require.Equal(t, "pending", doc.Inbox.State)
	require.Nil(t, doc.HeldBy)
	require.Contains(t, doc.HeldByError, "read-only transaction")
}
