package main

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRecoverCheckpointOfAnotherStripeAccount: a -checkpoint saved by a
// run with one Stripe account's key (the US entity's) and continued with
// another's (the EU entity's, whose Events API lists none of the US
// events) is refused, exit 2, saying to name one checkpoint per Stripe
// account, the EU event after the checkpoint's not stored. It continued
// the US checkpoint, listed from its last event on and reported success.
func TestRecoverCheckpointOfAnotherStripeAccount(t *testing.T) {
	t.Parallel()
	s, _, usSrv, env, _, since, _ := newCheckpointFixture(t, "usacct")
	args := []string{"recover", "-since", since, "-types", "invoice.paid", "-checkpoint", "outage"}
	r := idemctl(t, s.db, env, append(args, "-api-base", usSrv.URL)...)
	require.Equal(t, exitOK, r.code, r.stderr)

	eu := &eventsAPI{
		events: [][]byte{eventPayload(t, "evt_euacct_0", "invoice.paid", "in_euacct_0", time.Now().Add(-30*time.Minute).Unix())},
		types:  []string{"invoice.paid"},
	}
	euSrv := httptest.NewServer(eu)
	t.Cleanup(euSrv.Close)
	r = idemctl(t, s.db, env, append(args, "-api-base", euSrv.URL)...)
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `checkpoint "outage" continues from event evt_usacct_0`)
	require.Contains(t, r.stderr, "name one checkpoint per Stripe account")
	show := idemctl(t, s.db, nil, "show", "evt_euacct_0")
	require.Equal(t, exitNotFound, show.code, "the EU event was stored: %s", show.stdout)

	help := idemctl(t, nil, nil, "recover", "-h")
	require.Contains(t, strings.Join(strings.Fields(help.stdout+help.stderr), " "),
		"name one per Stripe account too (a key of another is refused, exit 2,")
}
