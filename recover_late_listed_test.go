package idempotency_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverLateListedEventBehindCheckpoint: Stripe's Events API is
// eventually consistent, so an event can be listed only after events
// created later than it were listed and checkpointed. A later run of the
// checkpoint lists the window behind the checkpoint's last event again and
// applies it, once; the events already applied come out duplicates and the
// checkpoint does not move back.
func TestRecoverLateListedEventBehindCheckpoint(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		f := newFakeStripe()
		client := f.serve(t)
		now := time.Now().Truncate(time.Second)
		f.add(snapshotEvent(t, "evt_late_0", "invoice.paid", "in_late_0", now.Add(-3*time.Minute).Unix()))
		f.add(snapshotEvent(t, "evt_late_2", "invoice.paid", "in_late_2", now.Add(-time.Minute).Unix()))
		h := app.handler(t)
		opts := idempotency.RecoverOptions{Since: now.Add(-time.Hour), Checkpoint: "late", Now: func() time.Time { return now }}
		rep, err := h.Recover(t.Context(), client, opts)
		require.NoError(t, err)
		require.Equal(t, "evt_late_2", rep.LastEventID)

		// Created between the two, listed only now.
		f.add(snapshotEvent(t, "evt_late_1", "invoice.paid", "in_late_1", now.Add(-2*time.Minute).Unix()))
		rep, err = h.Recover(t.Context(), client, opts)
		require.NoError(t, err)
		require.True(t, rep.Resumed)
		require.Equal(t, 1, rep.Processed, "the late-listed event is applied: %+v", rep)
		require.Equal(t, "evt_late_2", rep.LastEventID, "the checkpoint does not move back")
		app.requireAppliedOnce(t, []string{"evt_late_0", "evt_late_1", "evt_late_2"})
	})
}

// requireListedFromOverlap requires call, the first request of a run that
// continues a checkpoint whose last event was created at lastCreated, to
// list from RecoveryOverlap before that event, without a cursor.
func requireListedFromOverlap(t *testing.T, call fakeRequest, lastCreated int64) {
	t.Helper()
	require.Empty(t, call.Query.Get("ending_before"), "no cursor: the overlap is found as the oldest events are")
	require.Equal(t, strconv.FormatInt(lastCreated-int64(idempotency.RecoveryOverlap/time.Second), 10), call.Query.Get("created[gte]"))
}

// overlapped returns the events a run continuing a checkpoint at last
// lists again: last, and those before it created at most RecoveryOverlap
// earlier.
func overlapped(events []outageEvent, last string) []outageEvent {
	at := slices.IndexFunc(events, func(ev outageEvent) bool { return ev.id == last })
	from := events[at].created - int64(idempotency.RecoveryOverlap/time.Second)
	return slices.DeleteFunc(slices.Clone(events[:at+1]), func(ev outageEvent) bool { return ev.created < from })
}
