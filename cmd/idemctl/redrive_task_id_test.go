package main

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRedriveTaskIDWithCommaAndSpaces: redrive -id takes a task's id as
// it is. A task key may hold a comma and begin or end with a space (a
// customer's name, a composite key); -id split it at the comma and
// trimmed it, so that the dead-lettered task its id names was not
// redriven, and the run said "redrove 0 events" and exited 0.
func TestRedriveTaskIDWithCommaAndSpaces(t *testing.T) {
	t.Parallel()
	db := idempotencytest.Postgres(t)
	const key = " Rosen, Jenny "
	in, id := deadLetteredTask(t, db, key)

	// With another id in the same run: each in its own -id.
	r := idemctl(t, db, nil, "redrive", "-id", id, "-id", "evt_unknown", "-dry-run")
	require.Equal(t, exitNotFound, r.code, r.stderr)
	require.Equal(t, "evt_unknown: not found: the inbox has no event or task with this id\n"+
		"would redrive 1 task (dry run: none moved)\n"+tasksRedriveNote+"\n", r.stdout)
	r = idemctl(t, db, nil, "redrive", "-id", id)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "redrove 1 task: pending again, with a fresh attempt budget\n", r.stdout)
	rec, _, err := in.Lookup(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, idempotency.InboxPending, rec.State)

	// A task's id in a list, or after white space, is refused, nothing
	// redriven: split and trimmed, it would name task "notify" of key
	// "Rosen", which may exist and would run again.
	for _, v := range []string{"evt_a," + id, " " + id} {
		r = idemctl(t, db, nil, "redrive", "-id", v)
		require.Equal(t, exitUsage, r.code, "%q: %s", v, r.stdout)
		require.Contains(t, r.stderr, "a task's id goes alone in its -id", v)
		require.Empty(t, r.stdout, v)
	}

	// Event ids still go as a comma list.
	r = idemctl(t, db, nil, "redrive", "-id", "evt_a, evt_b", "-dry-run")
	require.Equal(t, exitNotFound, r.code, r.stderr)
	require.Equal(t, "evt_a: not found: the inbox has no event or task with this id\n"+
		"evt_b: not found: the inbox has no event or task with this id\n"+
		"would redrive 0 events (dry run: none moved)\n", r.stdout)
}

// deadLetteredTask stores in db an event whose handler enqueues the task
// "notify" with key, applies it, and lets the task fail permanently: the
// inbox, and the task's id, dead-lettered.
func deadLetteredTask(t *testing.T, db *idempotencytest.Database, key string) (*idempotency.Inbox, string) {
	t.Helper()
	store := db.NewStore(t, idempotency.PgxConfig{})
	hs := idempotency.NewHandlers()
	notify := idempotency.NewTask(hs, "notify", func(context.Context, idempotency.TaskRun[string]) error {
		return idempotency.Permanent(errors.New("the mail provider refused the address"))
	})
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		_, err := notify.Enqueue(ctx, tx, key, "hello")
		return err
	})
	quiet := slog.New(slog.DiscardHandler)
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: quiet})
	require.NoError(t, err)
	hook, err := in.Handler(idempotency.Config{Secrets: []string{secret}, Logger: quiet})
	require.NoError(t, err)
	a := idempotencytest.Deliver(hook, eventPayload(t, "evt_notify", "invoice.paid", "in_notify", 1756742400), secret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	_, err = in.WorkDue(t.Context())
	require.NoError(t, err)
	id := "task:notify:" + key
	rec, ok, err := in.Lookup(t.Context(), id)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, idempotency.InboxDeadLetter, rec.State)
	return in, id
}
