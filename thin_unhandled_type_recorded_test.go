package idempotency_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestThinEventUnhandledTypeRecordedWithRecordIgnored: with
// Config.RecordIgnored, a thin notification of a type with no handler is
// fetched and its event's claim stored as ignored, as a snapshot event of
// such a type is, so that the ledger lists it. (No test failed when it was
// answered ignored without a fetch, RecordIgnored or not, and stored
// nowhere.)
func TestThinEventUnhandledTypeRecordedWithRecordIgnored(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory") // no handler of thinType
	f, notification, _ := newThinFake("evt_thin_recorded")
	h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(), StripeClient: f.serve(t), RecordIgnored: true,
	})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, notification, testSecret)
	require.Equal(t, http.StatusOK, a.Status)
	require.Equal(t, idempotency.OutcomeIgnored, a.Outcome)
	require.Len(t, f.calls(), 1, "the event fetched")
	rec, found, err := app.store.(*idempotency.MemoryStore).LookupEvent(t.Context(), "evt_thin_recorded")
	require.NoError(t, err)
	require.True(t, found, "the ignored event's claim stored")
	require.Equal(t, idempotency.OutcomeIgnored, rec.Outcome)
	require.Equal(t, thinType, rec.EventType)
}
