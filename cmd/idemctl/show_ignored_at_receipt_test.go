package main

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestShowIgnoredAtReceiptSaysWhy: an event the service's Handler stored
// ignored (RecordIgnored, no handler for its type) has no last error in
// the store; show says why it is ignored on its "last error" line, as the
// dashboard's event page does, and -json keeps the stored value, "". It
// showed state ignored and "last error -".
func TestShowIgnoredAtReceiptSaysWhy(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	require.Equal(t, idempotency.OutcomeIgnored, s.deliver(t, "evt_ign_receipt", "customer.created", "cus_1"))
	rec := s.lookup(t, "evt_ign_receipt")
	require.Equal(t, idempotency.InboxIgnored, rec.State)
	require.Empty(t, rec.LastError, "what the store holds: no reason")

	r := idemctl(t, s.db, nil, "show", "evt_ign_receipt")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^  state\s+ignored$`, r.stdout)
	require.Regexp(t, `(?m)^  last error\s+`+regexp.QuoteMeta("ignored at receipt: no handler for its type in the process "+
		"that received it (Config.RecordIgnored stores it)")+`$`, r.stdout)

	doc := decode[showJSON](t, idemctl(t, s.db, nil, "show", "-json", "evt_ign_receipt"))
	require.NotNil(t, doc.Inbox)
	require.Empty(t, doc.Inbox.LastError, "-json shows what is stored")
}

// TestListIgnoredAtReceiptSaysSo: list's last error cell of an event
// stored ignored at receipt says so, within the 60 characters the cell
// keeps, and where to look for more (show says it whole); -json keeps the
// stored value, "". The cell was "-", as for an event with no error.
func TestListIgnoredAtReceiptSaysSo(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	require.Equal(t, idempotency.OutcomeIgnored, s.deliver(t, "evt_ign_listed", "customer.created", "cus_1"))

	r := idemctl(t, s.db, nil, "list", "-state", "ignored")
	require.Equal(t, 0, r.code, r.stderr)
	require.Len(t, lines(r.stdout), 1+1)
	require.Regexp(t, `(?m)^evt_ign_listed\s+event\s+customer\.created\s+cus_1\s+-\s+ignored\s+0\s+\S+Z\s+-\s+`+
		regexp.QuoteMeta("ignored at receipt: no handler for its type; see the event")+`$`, r.stdout)

	doc := decode[listJSON](t, idemctl(t, s.db, nil, "list", "-json", "-state", "ignored"))
	require.Len(t, doc.Records, 1)
	require.Empty(t, doc.Records[0].LastError, "-json shows what is stored")
}
