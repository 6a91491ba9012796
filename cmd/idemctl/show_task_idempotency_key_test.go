package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestShowTaskIdempotencyKey: show of a task prints the idempotency key
// every attempt of it got (TaskRun.IdempotencyKey), by which the
// operator finds its requests in the provider's log, and, for a finished
// task that took more than one attempt, that an attempt before the last
// may have had its effect all the same: a customer's two welcome emails
// from one task showed "attempts 2" and nothing more.
func TestShowTaskIdempotencyKey(t *testing.T) {
	t.Parallel()
	db := idempotencytest.Postgres(t)
	store := db.NewStore(t, idempotency.PgxConfig{})
	clock := idempotencytest.NewClock(time.Now())
	hs := idempotency.NewHandlers()
	var keys []string // WorkDue runs the func on the test's goroutine
	welcome := idempotency.NewTask(hs, "send-welcome-email", func(_ context.Context, run idempotency.TaskRun[string]) error {
		keys = append(keys, run.IdempotencyKey)
		if run.Attempt == 1 {
			return errors.New("mailer: context deadline exceeded") // the provider had accepted it
		}
		return nil
	})
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		_, err := welcome.Enqueue(ctx, tx, "cus_twice", "cus_twice")
		return err
	})
	quiet := slog.New(slog.DiscardHandler)
	inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{MaxAttempts: 3, Now: clock.Now, Logger: quiet})
	require.NoError(t, err)
	hook, err := inbox.Handler(idempotency.Config{Secrets: []string{secret}, Now: clock.Now, Logger: quiet})
	require.NoError(t, err)
	ans := idempotencytest.Deliver(hook, eventPayload(t, "evt_paid_1", "invoice.paid", "in_1", time.Now().Unix()), secret)
	require.Equal(t, idempotency.OutcomeQueued, ans.Outcome, ans.Body)
	for range 3 {
		_, err := inbox.WorkDue(t.Context())
		require.NoError(t, err)
		clock.Advance(time.Hour) // past the backoff
	}
	const id = "task:send-welcome-email:cus_twice"
	rec, ok, err := inbox.Lookup(t.Context(), id)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, idempotency.InboxProcessed, rec.State)
	require.Equal(t, 2, rec.Attempt)
	sum := sha256.Sum256([]byte(id)) // computed apart from the library's
	want := "send-welcome-email-" + hex.EncodeToString(sum[:])
	require.Equal(t, []string{want, want}, keys)

	r := idemctl(t, db, nil, "show", id)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "\nidempotency key  "+want+"\n")
	require.Contains(t, r.stdout, "\n  attempts       2 (an attempt before the last failed or lost its worker, and may have had its effect all the same: "+
		"look at the provider's log for the idempotency key)\n")

	r = idemctl(t, db, nil, "show", "-json", id)
	require.Equal(t, 0, r.code, r.stderr)
	doc := decode[showJSON](t, r)
	require.Equal(t, want, doc.IdempotencyKey)
	r = idemctl(t, db, nil, "show", "-json", "evt_paid_1")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, "idempotency_key", "an event has none")
}
