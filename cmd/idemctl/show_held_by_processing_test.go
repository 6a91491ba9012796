package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestShowHeldByProcessing: an event a worker holds, which nothing else
// holds back, is shown held by nothing because a worker holds it, not
// "due at its next attempt", which it has none of while processing (the
// runbook reads that line as workers down or behind).
func TestShowHeldByProcessing(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	hs := idempotency.NewHandlers()
	started, release := make(chan struct{}), make(chan struct{})
	idempotency.On(hs, "charge.refunded", func(context.Context, idempotency.Tx, idempotency.Event[json.RawMessage]) error {
		close(started)
		<-release
		return nil
	})
	quiet := slog.New(slog.DiscardHandler)
	inbox, err := idempotency.NewInbox(s.store, hs, idempotency.InboxConfig{Logger: quiet})
	require.NoError(t, err)
	hook, err := inbox.Handler(idempotency.Config{Secrets: []string{secret}, Logger: quiet})
	require.NoError(t, err)
	a := idempotencytest.Deliver(hook, eventPayload(t, "evt_running", "charge.refunded", "ch_run", s.clock().Unix()), secret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	worked := make(chan error, 1)
	go func() {
		_, err := inbox.WorkDue(context.Background())
		worked <- err
	}()
	<-started
	r := idemctl(t, s.db, nil, "show", "evt_running")
	close(release)
	require.NoError(t, <-worked)

	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^  state\s+processing$`, r.stdout)
	require.Regexp(t, `(?m)^  held by\s+- \(nothing: a worker holds it under a lease\)$`, r.stdout)
	require.Equal(t, idempotency.InboxProcessed, s.lookup(t, "evt_running").State)
}
