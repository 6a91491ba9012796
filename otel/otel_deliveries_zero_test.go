package idempotencyotel_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// deliveryAnswers are the outcome and status pairs a Handler answers, as
// idempotency.deliveries names them.
var deliveryAnswers = map[string]float64{
	"outcome=processed,status=200": 0, "outcome=duplicate,status=200": 0, "outcome=ignored,status=200": 0,
	"outcome=skipped,status=200": 0, "outcome=queued,status=200": 0,
	"outcome=rejected,status=400": 0, "outcome=rejected,status=405": 0, "outcome=rejected,status=413": 0,
	"outcome=failed,status=500": 0, "outcome=failed,status=503": 0, "outcome=unavailable,status=503": 0,
}

// TestDeliveriesReportedZeroFromTheStart: a new Telemetry reports
// idempotency.deliveries at 0 for every outcome and status a Handler
// answers, before any delivery, and deliveries of each kind add no other
// series. The README's alerts divide rate()s of the counter: a series
// that first appears at 1 is missed by Prometheus's rate() and
// increase(), so a process's first 5xx or refusals went uncounted, and
// a first 200 left out of the denominator.
func TestDeliveriesReportedZeroFromTheStart(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t, time.Now)
	require.Equal(t, deliveryAnswers, tel.points(t)["idempotency.deliveries"])

	hs := handlers()
	idempotency.On(hs, "invoice.voided", func(context.Context, idempotency.Tx, idempotency.Event[json.RawMessage]) error {
		return idempotency.Skip("voided")
	})
	cfg := idempotency.Config{Secrets: []string{secret}, Logger: slog.New(slog.DiscardHandler), Observer: tel.Observer()}
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, cfg)
	require.NoError(t, err)
	in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{Logger: slog.New(slog.DiscardHandler), Observer: tel.Observer()})
	require.NoError(t, err)
	ih, err := in.Handler(idempotency.Config{Secrets: []string{secret}})
	require.NoError(t, err)

	paid := event(t, "evt_paid", "invoice.paid", "in_1")
	for _, a := range []idempotencytest.Answer{
		idempotencytest.Deliver(h, paid, secret),
		idempotencytest.Deliver(h, paid, secret),
		idempotencytest.Deliver(h, event(t, "evt_unknown", "charge.captured", "ch_1"), secret),
		idempotencytest.Deliver(h, event(t, "evt_voided", "invoice.voided", "in_2"), secret),
		idempotencytest.Deliver(h, event(t, "evt_fails", "invoice.payment_failed", "in_3"), secret),
		idempotencytest.Deliver(h, paid, "whsec_forged"),
		idempotencytest.Deliver(ih, event(t, "evt_queued", "invoice.paid", "in_4"), secret),
	} {
		require.NotZero(t, a.Status)
	}
	for _, r := range []*http.Request{
		httptest.NewRequest(http.MethodGet, "/", nil),
		httptest.NewRequest(http.MethodPost, "/", strings.NewReader(strings.Repeat("x", 1<<20+1))),
	} {
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	counted := map[string]float64{}
	for k := range deliveryAnswers {
		if !strings.HasSuffix(k, "status=503") { // a thin event's fetch, a store down: not met here
			counted[k] = 1
		}
	}
	require.Equal(t, deliveriesCounted(counted), tel.points(t)["idempotency.deliveries"], "each counted once, on the series from the start")
}

// deliveriesCounted is idempotency.deliveries after the counts of counted:
// the other answers' series at 0.
func deliveriesCounted(counted map[string]float64) map[string]float64 {
	all := maps.Clone(deliveryAnswers)
	maps.Copy(all, counted)
	return all
}
