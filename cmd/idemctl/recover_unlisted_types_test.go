package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverNamesTypesNoEventWasListedFor: a -types type no listed event
// had (a misspelt invoice.payed: the Events API lists nothing for it, and
// says nothing) is named on stderr, with a hint to check its spelling, and
// in -json's unlisted_types; the run still exits 0. A type whose only
// event came out a duplicate was listed; a run that continued a checkpoint
// says it listed from shortly before the checkpoint, not from -since; a
// run stopped by an error says it stopped. It listed nothing and exited 0
// without a word.
func TestRecoverNamesTypesNoEventWasListedFor(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	require.Equal(t, idempotency.OutcomeQueued, s.deliver(t, "evt_unl_0", "invoice.paid", "in_unl_0"))
	created := time.Now().Add(-time.Hour).Unix()
	api := &eventsAPI{
		events: [][]byte{
			eventPayload(t, "evt_unl_0", "invoice.paid", "in_unl_0", created),
			eventPayload(t, "evt_unl_1", "charge.failed", "ch_unl_1", created+1),
		},
		types: []string{"invoice.paid", "charge.failed"},
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	env := map[string]string{"STRIPE_SECRET_KEY": stripeKey}
	since := time.Now().Add(-2 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)

	r := idemctl(t, s.db, env, "recover", "-since", since, "-types", "invoice.paid,invoice.payed", "-api-base", srv.URL, "-checkpoint", "unl")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `(?m)^duplicate\s+1\s`, r.stdout)
	require.Contains(t, r.stderr, "idemctl: recover: no event listed for invoice.payed since "+since+": check its spelling")
	require.NotContains(t, r.stderr, "for invoice.paid")

	// Continued: it listed from 10 minutes before the checkpoint's last
	// event, not from -since. Its events listed again are duplicates, and
	// listed.
	r = idemctl(t, s.db, env, "recover", "-since", since, "-types", "invoice.paid,invoice.payed", "-api-base", srv.URL, "-checkpoint", "unl", "-json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), r.stdout)
	require.Equal(t, true, doc["resumed"])
	require.Equal(t, []any{"invoice.payed"}, doc["unlisted_types"])
	require.Contains(t, r.stderr, `idemctl: recover: no event listed for invoice.payed in this run, which continued checkpoint "unl" from 10 minutes before its last event: check its spelling`)

	r = idemctl(t, s.db, env, "recover", "-since", since, "-types", "charge.failed,invoice.paid", "-api-base", srv.URL, "-json")
	require.Equal(t, exitOK, r.code, r.stderr)
	doc = nil
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), r.stdout)
	require.Equal(t, []any{}, doc["unlisted_types"])
	require.NotContains(t, r.stderr, "no event listed")

	// Stopped by an error before any event was listed.
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","message":"this key cannot list events"}}`))
	}))
	t.Cleanup(refusing.Close)
	r = idemctl(t, s.db, env, "recover", "-since", since, "-types", "invoice.paid,invoice.payed", "-api-base", refusing.URL)
	require.Equal(t, exitFailed, r.code, r.stderr)
	require.Contains(t, r.stderr, "idemctl: recover: no event listed for invoice.paid, invoice.payed since "+since+" until it stopped: check their spelling")

	help := idemctl(t, nil, nil, "recover", "-h")
	text := strings.Join(strings.Fields(help.stdout+help.stderr), " ")
	require.Contains(t, text, "the exit code stays 0 for it")
	require.Contains(t, text, `"unlisted_types":[..]`)
}
