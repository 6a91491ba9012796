package main

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPastedArgumentsAreTrimmed: show's and forget's event ids and
// recover's -account are read without the white space around them, as
// recover's -types are, and
// list's, ledger's and redrive's ids and accounts are: a pasted
// " evt_paid_1\t" names evt_paid_1. show and forget said the id was in
// neither the inbox nor the ledger (exit 3), and recover refused the
// account as having white space (exit 2). A task's id is taken as it
// is, its key's spaces kept; an id of white space alone is empty.
func TestPastedArgumentsAreTrimmed(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)

	r := idemctl(t, s.db, nil, "show", "-json", " evt_paid_1\t")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "evt_paid_1", decode[showJSON](t, r).ID)

	r = idemctl(t, s.db, nil, "show", "task:send-receipt:in_1 ")
	require.Equal(t, exitNotFound, r.code, "a task's id is taken as it is: %s", r.stderr)

	r = idemctl(t, s.db, nil, "show", " \t")
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "the event id is empty")

	r = idemctl(t, s.db, nil, "forget", " evt_paid_1", "evt_paid_1 ", "evt_paid_2\n")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "evt_paid_1: forgotten: its claim, its guards and its inbox row are deleted; it is applied again when it comes next, once replicas that saw it no longer answer it duplicate from memory (up to PgxConfig.RecentClaimsTTL, 1 minute)\n"+
		"evt_paid_2: forgotten: its claim, its guards and its inbox row are deleted; it is applied again when it comes next, once replicas that saw it no longer answer it duplicate from memory (up to PgxConfig.RecentClaimsTTL, 1 minute)\n", r.stdout,
		"each id once, trimmed")

	raw := accountEventPayload(t, "evt_conn_pasted", "invoice.paid", "in_conn_pasted", "acct_1Conn", time.Now().Add(-time.Hour).Unix())
	api := &eventsAPI{events: [][]byte{raw}, types: []string{"invoice.paid"}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	r = idemctl(t, s.db, map[string]string{"STRIPE_SECRET_KEY": stripeKey},
		"recover", "-since", "2h", "-types", " invoice.paid\t", "-account", " acct_1Conn\t", "-api-base", srv.URL)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "acct_1Conn", s.lookup(t, "evt_conn_pasted").Account)
	require.NotEmpty(t, api.accounts)
	for i, got := range api.accounts {
		require.Equal(t, []string{"acct_1Conn"}, got, "request %d sent the account trimmed", i+1)
	}
}
