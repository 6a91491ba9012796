package idempotency_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRecoverRejectedEventLogsItsOutcome: a listed event the Handler
// refuses (a NUL byte in its object id) is counted failed, and the line
// that logs it names its outcome, rejected, as a delivery's does. It
// logged outcome="": the Handler's accept leaves the outcome to
// ServeHTTP, which Recover does not go through.
func TestRecoverRejectedEventLogsItsOutcome(t *testing.T) {
	t.Parallel()
	created := time.Now().Add(-time.Hour).Unix()
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if q := r.URL.Query(); q.Get("ending_before") != "" || q.Get("starting_after") != "" {
			_, _ = w.Write([]byte(`{"object":"list","url":"/v1/events","has_more":false,"data":[]}`))
			return
		}
		_, _ = fmt.Fprintf(w, `{"object":"list","url":"/v1/events","has_more":false,"data":[`+
			`{"id":"evt_rejected","object":"event","type":"invoice.paid","created":%d,"api_version":%q,`+
			`"data":{"object":{"id":"in_\u0000rejected","object":"invoice"}}}]}`, created, stripe.APIVersion)
	})
	client := idempotencytest.NewStripeClient(fakeStripeKey, api)
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[json.RawMessage]) error { return nil })
	logger, logs := testLogger()
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{Secrets: []string{testSecret}, Logger: logger})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rep, err := h.Recover(ctx, client, idempotency.RecoverOptions{Since: time.Now().Add(-2 * time.Hour), RequestsPerSecond: 100})
	require.NoError(t, err)
	require.Equal(t, []string{"evt_rejected"}, rep.FailedIDs)
	var line string
	for l := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(l, "evt_rejected") {
			line = l
		}
	}
	require.Contains(t, line, `"outcome":"rejected"`, logs.String())
	require.Contains(t, line, "malformed event")
}
