package idempotency_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestThinEventAnswerThatIsNotAnEvent: the fetch of a thin event's event
// answered 200 with JSON that is not a v2 event (a proxy's
// {"status":"ok"}) is an answer not asked for, as for Retrieve and
// Recover: the notification is answered 503 stripe_unavailable, and the
// error names the status and quotes nothing of the body. Before, it was
// read as a malformed event of Stripe's, answered 500 processing_failed,
// which the log and the metrics showed as the handler's failure.
func TestThinEventAnswerThatIsNotAnEvent(t *testing.T) {
	t.Parallel()
	ok := notStripeAnswer{name: "200 JSON not an event", serve: proxyOK,
		says: "HTTP 200, not a v2 event of the Stripe API: JSON of another kind"}
	app, a, res := deliverThinAnsweredBy(t, ok, "evt_thin_proxy_ok")
	require.Equal(t, http.StatusServiceUnavailable, a.Status, a.Body)
	require.JSONEq(t, `{"error":"stripe_unavailable"}`, a.Body)
	requireErrorText(t, res.Err, "retrieving the v2 event", ok)
	require.NotContains(t, res.Err.Error(), proxyEcho)
	require.Empty(t, app.appliedCounts(t))
}
