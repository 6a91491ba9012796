package main

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverWarnsWhereNoWorkerEverRan: recover on the database of a
// service in synchronous mode, whose inbox no worker ever attempted an
// event or a task in, stores the events pending all the same, and says on
// stderr that nothing there applies them and what does; where a worker
// has attempted one (inbox mode), or nothing was stored, it says nothing
// of it.
func TestRecoverWarnsWhereNoWorkerEverRan(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	// The service delivered synchronously: its ledger has the claim, its
	// inbox nothing.
	_, err := s.store.Run(t.Context(), idempotency.Claim{EventID: "evt_sync_0", EventType: "invoice.paid", ObjectID: "in_sync_0"},
		func(context.Context, idempotency.Tx) error { return nil })
	require.NoError(t, err)
	created := time.Now().Add(-time.Hour).Unix()
	api := &eventsAPI{
		events: [][]byte{
			eventPayload(t, "evt_sync_0", "invoice.paid", "in_sync_0", created),
			eventPayload(t, "evt_sync_1", "invoice.paid", "in_sync_1", created+1),
		},
		types: []string{"invoice.paid", "invoice.paid"},
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	env := map[string]string{"STRIPE_SECRET_KEY": stripeKey}
	since := time.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339)
	const warning = "idemctl: recover: no worker ever attempted an event or a task this inbox holds: " +
		"if the service runs in synchronous mode (a Handler without an Inbox), the 1 event stored stays pending, never applied; " +
		"run Handler.Recover in the service instead, which applies it"

	r := idemctl(t, s.db, env, "recover", "-since", since, "-types", "invoice.paid", "-api-base", srv.URL)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `(?m)^queued\s+1\s`, r.stdout)
	require.Regexp(t, `(?m)^duplicate\s+1\s`, r.stdout)
	require.Contains(t, r.stderr, warning+"\n")
	require.Equal(t, idempotency.InboxPending, s.lookup(t, "evt_sync_1").State)

	// Run again: nothing more stored, nothing said.
	r = idemctl(t, s.db, env, "recover", "-since", since, "-types", "invoice.paid", "-api-base", srv.URL)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.NotContains(t, r.stderr, "no worker ever attempted")

	// Once a worker has attempted one, as in inbox mode: nothing said.
	s.work(t, s.inbox)
	api.mu.Lock()
	api.events = append(api.events, eventPayload(t, "evt_sync_2", "invoice.paid", "in_sync_2", created+2))
	api.types = append(api.types, "invoice.paid")
	api.mu.Unlock()
	r = idemctl(t, s.db, env, "recover", "-since", since, "-types", "invoice.paid", "-api-base", srv.URL)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `(?m)^queued\s+1\s`, r.stdout)
	require.NotContains(t, r.stderr, "no worker ever attempted")
}

// TestRecoverWarningCountsTheEventsStored: recover's warning where no
// worker ever ran names the events it stored in the plural when there are
// several.
func TestRecoverWarningCountsTheEventsStored(t *testing.T) {
	t.Parallel()
	require.Equal(t, "no worker ever attempted an event or a task this inbox holds: "+
		"if the service runs in synchronous mode (a Handler without an Inbox), the 2 events stored stay pending, never applied; "+
		"run Handler.Recover in the service instead, which applies them", neverWorkedText(2))
}
