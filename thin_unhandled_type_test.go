package idempotency_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestThinEventUnhandledTypeIsIgnored: a thin notification of a type with
// no handler is answered 200 ignored, as any event of such a type, without
// fetching its event: the notification names the type, and the fetched
// event would be dropped. An API that fails meanwhile does not turn it
// into a 503 that Stripe retries for days.
func TestThinEventUnhandledTypeIsIgnored(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory") // no handler of thinType
	f, notification, _ := newThinFake("evt_thin_unhandled")
	f.fail = func(int, *http.Request) int { return http.StatusServiceUnavailable }
	h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(), StripeClient: f.serve(t),
	})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, notification, testSecret)
	require.Equal(t, http.StatusOK, a.Status)
	require.Equal(t, idempotency.OutcomeIgnored, a.Outcome)
	require.Empty(t, f.calls(), "nothing fetched")

	// What no store can keep is refused as it is in a snapshot event of
	// a type with no handler.
	long, _ := thinEvent("evt_" + strings.Repeat("x", 1100))
	a = idempotencytest.Deliver(h, long, testSecret)
	require.Equal(t, http.StatusBadRequest, a.Status)
	require.JSONEq(t, `{"error":"invalid_event"}`, a.Body)
}
