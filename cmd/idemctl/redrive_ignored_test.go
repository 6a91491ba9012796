package main

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

// TestRedriveIgnored: -state ignored moves the events a release without
// their type's handler recorded ignored back to pending with a fresh
// budget, selected by type and time (the deploy's start), and a release
// with the handler applies them once; the default (dead_letter) does not
// take them, an -id of one says -state ignored takes it, and -kind task
// with -state ignored is refused (a task is never ignored).
func TestRedriveIgnored(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	require.Equal(t, idempotency.OutcomeIgnored, s.deliver(t, "evt_ign_1", "invoice.finalized", "in_ign"))
	require.Equal(t, idempotency.OutcomeIgnored, s.deliver(t, "evt_ign_other", "customer.created", "cus_ign"))

	r := idemctl(t, s.db, nil, "redrive", "-id", "evt_ign_1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "evt_ign_1: not redriven: it is ignored, not dead_letter (-state ignored takes it)\n"+
		"redrove 0 events: none selected is dead_letter\n", r.stdout)
	r = idemctl(t, s.db, nil, "redrive", "-state", "ignored", "-kind", "task", "-all")
	require.Equal(t, exitUsage, r.code)
	require.Equal(t, "idemctl: redrive: -state ignored with -kind task: a task is never ignored; -state ignored redrives events\n", r.stderr)

	r = idemctl(t, s.db, nil, "redrive", "-state", "ignored", "-type", "invoice.finalized", "-since", "1h", "-dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "would redrive 1 event (dry run: none moved)\n", r.stdout)
	require.Equal(t, idempotency.InboxIgnored, s.lookup(t, "evt_ign_1").State)
	r = idemctl(t, s.db, nil, "redrive", "-state", "ignored", "-type", "invoice.finalized", "-since", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "redrove 1 event: pending again, with a fresh attempt budget\n", r.stdout)
	rec := s.lookup(t, "evt_ign_1")
	require.Equal(t, idempotency.InboxPending, rec.State)
	require.Zero(t, rec.Attempt)
	require.True(t, rec.FinishedAt.IsZero())
	require.Equal(t, idempotency.InboxIgnored, s.lookup(t, "evt_ign_other").State, "not of the type")

	// The release with the handler.
	var runs atomic.Int32
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.finalized", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
		runs.Add(1)
		return nil
	})
	next, err := idempotency.NewInbox(s.store, hs, idempotency.InboxConfig{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	s.work(t, next)
	require.Equal(t, idempotency.InboxProcessed, s.lookup(t, "evt_ign_1").State)
	require.Equal(t, int32(1), runs.Load())
	r = idemctl(t, s.db, nil, "redrive", "-state", "ignored", "-id", "evt_ign_1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "evt_ign_1: not redriven: it is processed, not ignored\n"+
		"redrove 0 events: none selected is ignored\n", r.stdout)
}
