package main

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRecoverSinceTheWholeWindow: -since 30d, the Events API's whole
// window as the help gives it, recovers; it is not refused as reaching
// a moment beyond the window, the time between parsing the flag and
// Recover's reading the clock (opening the store among it).
func TestRecoverSinceTheWholeWindow(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	api := &eventsAPI{}
	api.events = append(api.events, eventPayload(t, "evt_window_0", "invoice.paid", "in_window_0", time.Now().Add(-24*time.Hour).Unix()))
	api.types = append(api.types, "invoice.paid")
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)

	r := idemctl(t, s.db, map[string]string{"STRIPE_SECRET_KEY": stripeKey},
		"recover", "-since", "30d", "-types", "invoice.paid", "-api-base", srv.URL)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^queued\s+1\s+stored pending`, r.stdout)
}
