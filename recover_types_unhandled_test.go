package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverRefusesATypeWithoutHandler: a RecoverOptions.Types entry
// this Handler has no handler for (a typo such as "invoice.payed", a
// handler not registered) is refused before any request: every event of
// it would be answered ignored and left unrecorded. The run listed them,
// or with a typo none, and reported success. With Config.RecordIgnored,
// whose claims record such events, it is listed.
func TestRecoverRefusesATypeWithoutHandler(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	f := newFakeStripe()
	client := f.serve(t)
	now := time.Now()
	addPaidEvents(t, f, "unhandled", 3, now)
	opts := idempotency.RecoverOptions{Since: now.Add(-2 * time.Hour), Types: []string{"invoice.paid", "invoice.payed"}}
	rep, err := app.handler(t).Recover(t.Context(), client, opts)
	require.Error(t, err, "%+v", rep)
	require.Contains(t, err.Error(), `"invoice.payed"`)
	require.Contains(t, err.Error(), "no handler")
	require.Zero(t, rep.Requests)
	require.Empty(t, f.calls(), "no request made")

	recording, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), RecordIgnored: true})
	require.NoError(t, err)
	rep, err = recording.Recover(t.Context(), client, opts)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Processed)
}
