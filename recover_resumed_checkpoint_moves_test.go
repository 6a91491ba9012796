package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// resumedRun recovers f's events created in the last two hours under
// checkpoint name, on the clock now, with opts' PageSize, OnlyUndelivered
// and OnPage.
func resumedRun(t *testing.T, h *idempotency.Handler, f *fakeStripe, now time.Time, name string, opts idempotency.RecoverOptions) idempotency.RecoverReport {
	t.Helper()
	opts.Since, opts.Checkpoint, opts.RequestsPerSecond = now.Add(-2*time.Hour), name, 100
	opts.Now = func() time.Time { return now }
	rep, err := h.Recover(t.Context(), f.serve(t), opts)
	require.NoError(t, err)
	return rep
}

// resumedScene is a service on the memory store, its Handler, an empty
// fake Events API and the clock's second.
func resumedScene(t *testing.T) (*service, *idempotency.Handler, *fakeStripe, time.Time) {
	app := newService(t, "memory")
	return app, app.handler(t), newFakeStripe(), time.Now().Truncate(time.Second)
}

// TestRecoverResumedRunMovesPastEventsOfTheCheckpointsSecond: a run that
// continues a checkpoint moves it from the checkpoint's own event on, also
// to an event created after it in the same second, when no later second
// has one. (No test failed when only an event of a later second moved it:
// the checkpoint stayed behind the event, listed again by every run.)
func TestRecoverResumedRunMovesPastEventsOfTheCheckpointsSecond(t *testing.T) {
	t.Parallel()
	app, h, f, now := resumedScene(t)
	second := now.Add(-time.Hour).Unix()
	f.add(snapshotEvent(t, "evt_same_a", "invoice.paid", "in_same_a", second-100))
	f.add(snapshotEvent(t, "evt_same_l", "invoice.paid", "in_same_l", second))
	require.Equal(t, "evt_same_l", resumedRun(t, h, f, now, "same-second", idempotency.RecoverOptions{}).LastEventID)

	f.add(snapshotEvent(t, "evt_same_m", "invoice.paid", "in_same_m", second))
	rep := resumedRun(t, h, f, now, "same-second", idempotency.RecoverOptions{})
	require.True(t, rep.Resumed)
	require.Equal(t, 1, rep.Processed, "%+v", rep)
	require.Equal(t, "evt_same_m", rep.LastEventID)
	last, _, err := idempotency.RecoveryCheckpoint(t.Context(), app.store, "same-second")
	require.NoError(t, err)
	require.Equal(t, "evt_same_m", last)
}

// TestRecoverResumedRunNeverMovesTheCheckpointBack: a run that continues a
// checkpoint lists again, first, the events of the checkpoint's second
// created before its last event; the checkpoint, as stored and as OnPage
// is told, stays at its last event while they are handled. (No test failed
// when an event of that second, listed before the checkpoint's own, moved
// the checkpoint back to it.)
func TestRecoverResumedRunNeverMovesTheCheckpointBack(t *testing.T) {
	t.Parallel()
	app, h, f, now := resumedScene(t)
	second := now.Add(-time.Hour).Unix()
	f.add(snapshotEvent(t, "evt_back_k", "invoice.paid", "in_back_k", second))
	f.add(snapshotEvent(t, "evt_back_l", "invoice.paid", "in_back_l", second))
	require.Equal(t, "evt_back_l", resumedRun(t, h, f, now, "never-back", idempotency.RecoverOptions{}).LastEventID)

	var onPage, stored []string
	rep := resumedRun(t, h, f, now, "never-back", idempotency.RecoverOptions{
		PageSize: 1,
		OnPage: func(rep idempotency.RecoverReport) {
			onPage = append(onPage, rep.LastEventID)
			last, _, err := idempotency.RecoveryCheckpoint(t.Context(), app.store, "never-back")
			require.NoError(t, err)
			stored = append(stored, last)
		},
	})
	require.Equal(t, 2, rep.Duplicate, "%+v", rep)
	require.Equal(t, []string{"evt_back_l", "evt_back_l"}, onPage)
	require.Equal(t, []string{"evt_back_l", "evt_back_l"}, stored)
}

// TestRecoverCheckpointMovesWhenItsLastEventIsNoLongerListed: with
// OnlyUndelivered, the checkpoint's last event is no longer listed once
// Stripe delivered it; a run that continues the checkpoint moves it to the
// events created after it all the same. (No test failed when only meeting
// the checkpoint's own event again moved it: it never moved again.)
func TestRecoverCheckpointMovesWhenItsLastEventIsNoLongerListed(t *testing.T) {
	t.Parallel()
	app, h, f, now := resumedScene(t)
	created := now.Add(-time.Hour).Unix()
	opts := idempotency.RecoverOptions{OnlyUndelivered: true}
	f.add(snapshotEvent(t, "evt_gone_l", "invoice.paid", "in_gone_l", created))
	require.Equal(t, "evt_gone_l", resumedRun(t, h, f, now, "gone", opts).LastEventID)

	f.setDelivered("evt_gone_l")
	f.add(snapshotEvent(t, "evt_gone_n", "invoice.paid", "in_gone_n", created+1))
	rep := resumedRun(t, h, f, now, "gone", opts)
	require.True(t, rep.Resumed)
	require.Equal(t, idempotency.RecoverReport{Listed: 1, Processed: 1, Requests: 2, Resumed: true, LastEventID: "evt_gone_n"}, rep)
	app.requireAppliedOnce(t, []string{"evt_gone_l", "evt_gone_n"})
}
