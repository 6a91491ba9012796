package idempotency_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

func TestNewSignedRequestJSON(t *testing.T) {
	t.Parallel()
	b := newBench(t, idempotency.Config{}, nil)
	ev := stripe.Event{
		ID: "evt_go_value", Object: "event", Type: "invoice.paid", APIVersion: stripe.APIVersion, Created: time.Now().Unix(),
		Data: &stripe.EventData{Object: map[string]any{
			"id": "in_go_value", "object": "invoice", "metadata": map[string]string{"account_id": "acct_go"},
		}},
	}
	for _, value := range []any{ev, &ev, map[string]any{
		"id": "evt_map", "object": "event", "type": "invoice.paid", "api_version": stripe.APIVersion,
		"data": map[string]any{"object": map[string]any{"id": "in_map", "object": "invoice", "metadata": map[string]string{"account_id": "acct_go"}}},
	}} {
		req, err := idempotency.NewSignedRequestJSON("/", value, testSecret)
		require.NoError(t, err)
		rec := httptest.NewRecorder()
		b.handler.ServeHTTP(rec, req)
		require.Equal(t, 200, rec.Code, rec.Body.String())
	}
	require.Equal(t, 200, b.credits.get(t, "acct_go"), "two invoices, the Go value sent twice")
	require.Nil(t, ev.Data.Raw, "the caller's event is not modified")

	_, err := idempotency.NewSignedRequestJSON("/", make(chan int), testSecret)
	require.Error(t, err)
}

func TestReplayAndDeliver(t *testing.T) {
	t.Parallel()
	b := newBench(t, idempotency.Config{}, nil)
	payload := eventPayload(t, "invoice.paid", "evt_replay", paid)
	answers := idempotency.Replay(b.handler, payload, testSecret, 8)
	require.Len(t, answers, 8)
	require.Equal(t, 1, answers.Count(idempotency.OutcomeProcessed))
	a := idempotency.Deliver(b.handler, payload, testSecret)
	require.Equal(t, idempotency.Answer{Status: 200, Outcome: idempotency.OutcomeDuplicate, Body: `{"outcome":"duplicate"}`}, a)
	a = idempotency.Deliver(b.handler, payload, "whsec_wrong")
	require.Equal(t, 400, a.Status)
	require.Empty(t, a.Outcome)
}
