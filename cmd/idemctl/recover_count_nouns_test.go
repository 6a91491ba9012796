package main

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRecoverCountsInTheirNumber: recover's progress line and its error
// give a count of one its noun in the singular, as prune's "1 row deleted"
// and redrive's "1 event" do. It printed "1 pages" and "1 events failed".
func TestRecoverCountsInTheirNumber(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	created := time.Now().Add(-time.Hour).Unix()
	api := &eventsAPI{
		events: [][]byte{
			eventPayload(t, "evt_nouns_ok", "invoice.paid", "in_nouns", created),
			eventPayload(t, "evt_nouns_bad", "invoice.paid", "in_\x00nouns", created+1), // a NUL byte: malformed, failed
		},
		types: []string{"invoice.paid", "invoice.paid"},
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)

	r := idemctl(t, s.db, map[string]string{"STRIPE_SECRET_KEY": stripeKey},
		"recover", "-since", "2h", "-types", "invoice.paid", "-api-base", srv.URL, "-progress", "lines")
	require.NotEqual(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^failed\s+1\s+evt_nouns_bad$`, r.stdout)
	require.Contains(t, r.stderr, "idemctl: recover: 1 page, 2 events received\n")
	require.Contains(t, r.stderr, "1 event failed to be stored, first evt_nouns_bad;")
}
