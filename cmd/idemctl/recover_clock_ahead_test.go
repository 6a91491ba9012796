package main

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverReceivedOnTheDatabasesClock: idemctl recover run on a machine
// whose clock is an hour ahead of the database's stores the events it
// recovers received now by the database's clock, the workers' (Run warns
// when one is more than a second from it), not an hour from now: the oldest pending
// age, the alert that events wait and -since of list and redrive read
// them as stored now.
func TestRecoverReceivedOnTheDatabasesClock(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	created := time.Now().Add(-time.Hour).Unix()
	api := &eventsAPI{
		events: [][]byte{eventPayload(t, "evt_recovered_1", "invoice.paid", "in_1", created)},
		types:  []string{"invoice.paid"},
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	ahead := func() time.Time { return time.Now().Add(time.Hour) }
	r := idemctlAt(t.Context(), ahead, s.db, map[string]string{"STRIPE_SECRET_KEY": stripeKey},
		"recover", "-since", "3h", "-types", "invoice.paid", "-api-base", srv.URL)
	require.Equal(t, 0, r.code, r.stderr)
	rec := s.lookup(t, "evt_recovered_1")
	require.Equal(t, idempotency.InboxPending, rec.State)
	require.WithinDuration(t, time.Now(), rec.ReceivedAt, time.Minute, "received now by the database's clock")
}
