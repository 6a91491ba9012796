package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRecoverWithoutCheckpointClaimsNone: without -checkpoint, recover's
// report names the last event handled, not a checkpoint, and an
// interrupted run does not claim a checkpoint was saved. It printed
// "checkpoint at evt_..." and "the checkpoint saved" although none was
// kept: a run again with -checkpoint starts from -since, not there.
func TestRecoverWithoutCheckpointClaimsNone(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	api := &eventsAPI{}
	api.events = append(api.events, eventPayload(t, "evt_nocp_0", "invoice.paid", "in_nocp_0", time.Now().Add(-time.Hour).Unix()))
	api.types = append(api.types, "invoice.paid")
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	env := map[string]string{"STRIPE_SECRET_KEY": stripeKey}

	r := idemctl(t, s.db, env, "recover", "-since", "2h", "-types", "invoice.paid", "-api-base", srv.URL)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^queued\s+1\s+stored pending`, r.stdout)
	require.NotContains(t, r.stdout, "checkpoint at")
	require.Regexp(t, `(?m)^last event\s+evt_nocp_0$`, r.stdout)

	r = idemctl(t, s.db, env, "recover", "-since", "2h", "-types", "invoice.paid", "-api-base", srv.URL, "-checkpoint", "ops")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^checkpoint at\s+evt_nocp_0$`, r.stdout)

	// Interrupted while the first page is listed.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cancelling := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.ServeHTTP(w, r)
		cancel()
	}))
	t.Cleanup(cancelling.Close)
	r = idemctlCtx(ctx, s.db, env, "recover", "-since", "2h", "-types", "invoice.paid", "-api-base", cancelling.URL)
	require.NotEqual(t, 0, r.code, r.stdout)
	require.Contains(t, r.stdout, "interrupted")
	require.NotContains(t, r.stdout, "checkpoint saved")
	require.NotContains(t, r.stdout, "checkpoint at")
}
