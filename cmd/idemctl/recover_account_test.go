package main

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverAccount: -account lists as that connected account
// (Stripe-Account on every request) and stores its events with their
// account; its checkpoint refuses another -account, exit 2; an -account
// that is not a connected account's id is a usage error before the
// database is opened or anything requested. The flag did not exist.
func TestRecoverAccount(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	raw := accountEventPayload(t, "evt_conn_0", "invoice.paid", "in_conn_0", "acct_1Conn", time.Now().Add(-time.Hour).Unix())
	api := &eventsAPI{events: [][]byte{raw}, types: []string{"invoice.paid"}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	env := map[string]string{"STRIPE_SECRET_KEY": stripeKey}

	r := idemctl(t, s.db, env, "recover", "-since", "2h", "-types", "invoice.paid", "-account", "acct_1Conn", "-checkpoint", "ops:acct_1Conn", "-api-base", srv.URL)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^queued\s+1\s`, r.stdout)
	rec := s.lookup(t, "evt_conn_0")
	require.Equal(t, idempotency.InboxPending, rec.State)
	require.Equal(t, "acct_1Conn", rec.Account)
	require.NotEmpty(t, api.accounts)
	for i, got := range api.accounts {
		require.Equal(t, []string{"acct_1Conn"}, got, "request %d", i+1)
	}

	requests := len(api.queries)
	r = idemctl(t, s.db, env, "recover", "-since", "2h", "-types", "invoice.paid", "-account", "acct_2Other", "-checkpoint", "ops:acct_1Conn", "-api-base", srv.URL)
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `-checkpoint "ops:acct_1Conn" was started with -account acct_1Conn, not -account acct_2Other:`)

	for _, c := range []struct{ account, want string }{
		{"1Conn", "-account is not a connected account's id (acct_...)"},
		{"acct_1 Conn", "-account has white space or a control character"},
		{"acct_1/acct_2", "-account is a path of accounts"},
		{"acct_" + strings.Repeat("x", 251), "-account is 256 bytes long (at most 255)"},
	} {
		// No database: refused before it is opened.
		r := idemctl(t, nil, env, "recover", "-since", "2h", "-types", "invoice.paid", "-account", c.account, "-api-base", srv.URL)
		require.Equal(t, exitUsage, r.code, "%q: %s", c.account, r.stderr)
		require.Contains(t, r.stderr, c.want, c.account)
	}
	require.Len(t, api.queries, requests, "nothing requested")

	help := idemctl(t, nil, nil, "recover", "-h")
	require.Contains(t, strings.Join(strings.Fields(help.stdout+help.stderr), " "), "A checkpoint keeps its -account: name one per account.")
}
