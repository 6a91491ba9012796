package idempotency_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestThinEventInvalidTextIsRefused: a thin notification, or the v2 event
// fetched for it, whose id, type, context or related object id holds an
// unpaired surrogate escape or invalid UTF-8 is refused 400 invalid_event,
// as a snapshot event is (the answer table): decoded, each would read as
// U+FFFD, so that two distinct notifications were claimed under one id
// and the second answered duplicate and never applied, and an object id
// that was never sent was fetched and ordered on.
func TestThinEventInvalidTextIsRefused(t *testing.T) {
	t.Parallel()
	notification := func(id, context string) []byte {
		return []byte(`{"id":"` + id + `","object":"v2.core.event","type":"` + thinType + `","livemode":false,` +
			`"created":"2024-09-26T17:46:22.134Z","context":"` + context + `"}`)
	}

	t.Run("notification", func(t *testing.T) {
		t.Parallel()
		app := newService(t, "memory")
		thinEvents(app)
		f := newFakeStripe()
		_, f.v2["evt_\uFFFD"] = thinEvent("evt_\uFFFD") // the id both decode to
		h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{
			Secrets: []string{testSecret}, Logger: discardLogger(), StripeClient: f.serve(t),
		})
		require.NoError(t, err)
		for _, n := range [][]byte{
			notification(`evt_\ud800`, thinAccount),
			notification(`evt_\udc00`, thinAccount),
			notification("evt_\xff", thinAccount),
			notification("evt_ok", `acct_\ud800`),
		} {
			a := idempotencytest.Deliver(h, n, testSecret)
			require.Equal(t, http.StatusBadRequest, a.Status, "%s: %s", n, a.Body)
			require.JSONEq(t, `{"error":"invalid_event"}`, a.Body)
		}
		require.Empty(t, f.calls(), "nothing fetched")
		require.Empty(t, app.appliedCounts(t))
	})

	t.Run("fetched event", func(t *testing.T) {
		t.Parallel()
		app := newService(t, "memory")
		thinEvents(app)
		f := newFakeStripe()
		n, event := thinEvent("evt_thin_bad_related")
		f.v2["evt_thin_bad_related"] = []byte(strings.Replace(string(event), `"id":"`+thinMeter+`"`, `"id":"mtr_\ud800"`, 1))
		require.Contains(t, string(f.v2["evt_thin_bad_related"]), `mtr_\ud800`)
		h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{
			Secrets: []string{testSecret}, Logger: discardLogger(), StripeClient: f.serve(t),
		})
		require.NoError(t, err)
		a := idempotencytest.Deliver(h, n, testSecret)
		require.Equal(t, http.StatusBadRequest, a.Status, a.Body)
		require.JSONEq(t, `{"error":"invalid_event"}`, a.Body)
		require.Empty(t, app.appliedCounts(t))
	})
}
