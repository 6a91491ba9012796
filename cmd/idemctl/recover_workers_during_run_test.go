package main

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverSaysNothingWhereWorkersRanDuringIt: recover on the empty
// inbox of a service in inbox mode (a new one, or one whose rows were all
// pruned after a long outage) whose workers attempt the events it stores
// while it runs says nothing of workers that never ran: the inbox's last
// attempt is read again once the events are stored. It said that no worker
// had ever attempted a row, as for a service in synchronous mode, from a
// reading taken before the run.
func TestRecoverSaysNothingWhereWorkersRanDuringIt(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	created := time.Now().Add(-time.Hour).Unix()
	api := &eventsAPI{
		events: [][]byte{
			eventPayload(t, "evt_during_0", "invoice.paid", "in_during_0", created),
			eventPayload(t, "evt_during_1", "invoice.paid", "in_during_1", created+1),
		},
		types: []string{"invoice.paid", "invoice.paid"},
	}
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("ending_before") != "" {
			// The first page is stored: the service's workers apply it
			// before the run asks for the next.
			once.Do(func() { s.work(t, s.inbox) })
		}
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{"STRIPE_SECRET_KEY": stripeKey}
	since := time.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339)

	r := idemctl(t, s.db, env, "recover", "-since", since, "-types", "invoice.paid", "-api-base", srv.URL)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `(?m)^queued\s+2\s`, r.stdout)
	require.Equal(t, idempotency.InboxProcessed, s.lookup(t, "evt_during_0").State, "a worker applied it during the run")
	require.NotContains(t, r.stderr, "no worker ever attempted")
}
