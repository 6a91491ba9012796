package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverOnEventGivesTheObjectNotAnUnavailableEvent: OnEvent's Result
// names the event's object, as its doc says, a duplicate's too, and an
// event whose store was unavailable, which Listed does not count and the next run lists again,
// is not reported to OnEvent. (No test failed when a duplicate's Result
// had no ObjectID, or when OnEvent was called for the unavailable event.)
func TestRecoverOnEventGivesTheObjectNotAnUnavailableEvent(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	f := newFakeStripe()
	client := f.serve(t)
	f.add(snapshotEvent(t, "evt_onobj_0", "invoice.paid", "in_onobj_0", time.Now().Add(-time.Hour).Unix()))
	opts := idempotency.RecoverOptions{Since: time.Now().Add(-2 * time.Hour)}

	down, err := idempotency.NewHandler(unavailableStore{}, app.hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	var got []idempotency.Result
	opts.OnEvent = func(res idempotency.Result) { got = append(got, res) }
	rep, err := down.Recover(t.Context(), client, opts)
	require.ErrorIs(t, err, idempotency.ErrStoreUnavailable)
	require.Zero(t, rep.Listed)
	require.Empty(t, got, "the event the store could not take is not reported")

	rep, err = app.handler(t).Recover(t.Context(), client, opts)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Listed)
	require.Len(t, got, 1)
	require.Equal(t, []any{"evt_onobj_0", "invoice.paid", "in_onobj_0", idempotency.OutcomeProcessed},
		[]any{got[0].EventID, got[0].EventType, got[0].ObjectID, got[0].Outcome})

	// Listed again to an inbox's Handler, a duplicate the ledger holds,
	// which the Handler is not handed: its object still named.
	_, ih := app.inbox(t, nil)
	_, err = ih.Recover(t.Context(), client, opts)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, []any{"evt_onobj_0", "in_onobj_0", idempotency.OutcomeDuplicate},
		[]any{got[1].EventID, got[1].ObjectID, got[1].Outcome})
}
