package main

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverMode: -mode names the endpoint's mode. A STRIPE_SECRET_KEY
// of the other mode, or a -mode that is neither live nor test, is a usage
// error before the database is opened or anything requested, the key not
// quoted; a listed event of the other mode stops the run, nothing of its
// page stored; with the mode matching, the events are stored as before.
// The flag did not exist.
func TestRecoverMode(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	created := time.Now().Add(-time.Hour).Unix()
	testEvent := eventPayload(t, "evt_mode_0", "invoice.paid", "in_mode_0", created)
	liveEvent := []byte(strings.Replace(string(eventPayload(t, "evt_mode_1", "invoice.paid", "in_mode_1", created+1)), `"livemode":false`, `"livemode":true`, 1))
	api := &eventsAPI{events: [][]byte{testEvent, liveEvent}, types: []string{"invoice.paid", "invoice.paid"}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	env := map[string]string{"STRIPE_SECRET_KEY": stripeKey} // sk_test_

	for _, c := range []struct{ mode, want string }{
		{"live", "-mode live, and STRIPE_SECRET_KEY is a test-mode key, which lists test-mode events: use a key of the endpoint's mode"},
		{"Live", `-mode "Live" is not live or test`},
	} {
		// No database: refused before it is opened.
		r := idemctl(t, nil, env, "recover", "-since", "2h", "-types", "invoice.paid", "-mode", c.mode, "-api-base", srv.URL)
		require.Equal(t, exitUsage, r.code, "%s: %s", c.mode, r.stderr)
		require.Contains(t, r.stderr, c.want)
		require.NotContains(t, r.stdout+r.stderr, stripeKey)
	}
	require.Empty(t, api.queries, "nothing requested")

	r := idemctl(t, s.db, env, "recover", "-since", "2h", "-types", "invoice.paid", "-mode", "test", "-api-base", srv.URL)
	require.Equal(t, exitFailed, r.code, r.stderr)
	require.Contains(t, r.stderr, "event evt_mode_1 is a live-mode event (livemode true), Config.Mode is test; nothing of its page was handled")
	_, ok, err := s.inbox.Lookup(t.Context(), "evt_mode_0")
	require.NoError(t, err)
	require.False(t, ok, "nothing of the page stored")

	matching := httptest.NewServer(&eventsAPI{events: [][]byte{testEvent}, types: []string{"invoice.paid"}})
	t.Cleanup(matching.Close)
	r = idemctl(t, s.db, env, "recover", "-since", "2h", "-types", "invoice.paid", "-mode", "test", "-api-base", matching.URL)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `(?m)^queued\s+1\s`, r.stdout)
	require.Equal(t, idempotency.InboxPending, s.lookup(t, "evt_mode_0").State)

	help := idemctl(t, nil, nil, "recover", "-h")
	require.Contains(t, strings.Join(strings.Fields(help.stdout+help.stderr), " "), "-mode live or -mode test names the endpoint's mode and has it checked")
}
