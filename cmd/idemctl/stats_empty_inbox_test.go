package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestStatsSaysWhyTheInboxIsEmpty: on the database of a service in
// synchronous mode, whose events are in the ledger alone, stats' zeros
// come with a line saying why the inbox holds nothing, and where the
// events are; once the inbox holds a row, a task of a synchronous-mode
// service's or an event, the line is gone. -json is unchanged.
func TestStatsSaysWhyTheInboxIsEmpty(t *testing.T) {
	t.Parallel()
	db := idempotencytest.Postgres(t)
	s := newServiceOn(t, db, nil)
	_, err := s.store.Run(t.Context(), idempotency.Claim{EventID: "evt_sync", EventType: "invoice.paid", ObjectID: "in_sync"},
		func(context.Context, idempotency.Tx) error { return nil })
	require.NoError(t, err)

	r := idemctl(t, db, nil, "stats")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `(?m)^processed\s+0\s+0$`, r.stdout)
	require.Contains(t, r.stdout, "\ninbox empty: a service in synchronous mode (a Handler without an Inbox) stores no event in it: "+
		"its applied events are in the ledger alone (idemctl ledger lists them, idemctl show evt_... reads one), and a delivery that failed nowhere "+
		"(answered 5xx, Stripe sends it again); an inbox-mode one holds none received in the last Retention.Payloads (7 days by default)\n")
	require.NotContains(t, idemctl(t, db, nil, "stats", "-json").stdout, "inbox empty")

	// One with tasks: its inbox holds its tasks alone, and is not empty.
	hs := idempotency.NewHandlers()
	receipt := idempotency.NewTask(hs, "send-receipt", func(context.Context, idempotency.TaskRun[string]) error { return nil })
	_, err = s.store.Run(t.Context(), idempotency.Claim{EventID: "evt_sync_task", EventType: "invoice.paid", ObjectID: "in_sync_task"},
		func(ctx context.Context, tx idempotency.Tx) error {
			_, err := receipt.Enqueue(ctx, tx, "in_sync_task", customerEmail)
			return err
		})
	require.NoError(t, err)
	r = idemctl(t, db, nil, "stats")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `(?m)^pending\s+0\s+1$`, r.stdout)
	require.NotContains(t, r.stdout, "inbox empty")

	s.deliver(t, "evt_queued", "charge.refunded", "ch_queued")
	r = idemctl(t, db, nil, "stats")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.NotContains(t, r.stdout, "inbox empty")
}
