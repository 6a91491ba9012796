package idempotency_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRecoverAppliesAnEventLargerThanMaxBodyBytes: Config.MaxBodyBytes
// bounds what an unauthenticated sender can make the Handler read, not
// the Events API's answers: an event a delivery was refused for as too
// large (413) is recovered, applied once, as the godoc and README say.
func TestRecoverAppliesAnEventLargerThanMaxBodyBytes(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	f := newFakeStripe()
	client := f.serve(t)
	now := time.Now()
	raw := snapshotEvent(t, "evt_large", "invoice.paid", "in_large", now.Add(-time.Hour).Unix())
	const limit = 4 << 10
	// A description long enough to take the event over the limit.
	raw = []byte(strings.Replace(string(raw), `"amount_paid":100`, `"amount_paid":100,"description":"`+strings.Repeat("x", limit)+`"`, 1))
	require.Greater(t, len(raw), limit)
	f.add(raw)
	h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), MaxBodyBytes: limit})
	require.NoError(t, err)
	require.Equal(t, http.StatusRequestEntityTooLarge, idempotencytest.Deliver(h, raw, testSecret).Status)

	rep, err := h.Recover(t.Context(), client, idempotency.RecoverOptions{Since: now.Add(-2 * time.Hour)})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Processed, "%+v", rep)
	app.requireAppliedOnce(t, []string{"evt_large"})
}
