package idempotencytest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestDeliverAndReplaySignNow: NewSignedRequest, Deliver and Replay sign
// at the current time, as Stripe does, not merely within the handler's
// tolerance of it.
func TestDeliverAndReplaySignNow(t *testing.T) {
	t.Parallel()
	payload := invoicePaid(t, "evt_now", "in_now", "acct_now")
	var mu sync.Mutex
	var headers []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		headers = append(headers, r.Header.Get("Stripe-Signature"))
	})
	before := time.Now().Unix()
	idempotencytest.Deliver(h, payload, testSecret)
	idempotencytest.Replay(h, payload, testSecret, 3)
	req := idempotencytest.NewSignedRequest("/", payload, testSecret)
	headers = append(headers, req.Header.Get("Stripe-Signature"))
	after := time.Now().Unix()

	require.Len(t, headers, 5)
	for _, header := range headers {
		require.NoError(t, webhook.ValidatePayload(payload, header, testSecret), header)
		ts, _, _ := strings.Cut(strings.TrimPrefix(header, "t="), ",")
		at, err := strconv.ParseInt(ts, 10, 64)
		require.NoError(t, err, header)
		require.True(t, before <= at && at <= after, "signed at %d, not between %d and %d", at, before, after)
	}
}

// TestAnswerOutcomeOfAnyStatus: Answer.Outcome is the body's "outcome",
// whatever the status of the handler (Deliver takes any http.Handler), and
// empty when the body has none; Body is the body as answered.
func TestAnswerOutcomeOfAnyStatus(t *testing.T) {
	t.Parallel()
	answer := func(status int, body string) idempotencytest.Answer {
		return idempotencytest.Deliver(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}), []byte(`{}`), testSecret)
	}
	require.Equal(t, idempotencytest.Answer{Status: 202, Outcome: idempotency.OutcomeQueued, Body: `{"outcome":"queued"}`},
		answer(202, `{"outcome":"queued"}`))
	require.Equal(t, idempotencytest.Answer{Status: 500, Body: `not json`}, answer(500, `not json`))
}

// TestNewSignedRequestJSONData: the request goes to target; a stripe.Event
// whose Data.Raw is set is sent with that data.object, not Data.Object; one
// without Data is sent with "data":null; a Data.Object that cannot be
// encoded panics, naming it.
func TestNewSignedRequestJSONData(t *testing.T) {
	t.Parallel()
	body := func(req *http.Request) map[string]any {
		t.Helper()
		b, err := io.ReadAll(req.Body)
		require.NoError(t, err)
		require.NoError(t, webhook.ValidatePayload(b, req.Header.Get("Stripe-Signature"), testSecret))
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		return m
	}

	ev := stripe.Event{ID: "evt_raw", Object: "event", Type: "invoice.paid", Data: &stripe.EventData{
		Raw:    json.RawMessage(`{"id":"in_raw","object":"invoice"}`),
		Object: map[string]any{"id": "in_object", "object": "invoice"},
	}}
	req := idempotencytest.NewSignedRequestJSON("/webhooks/stripe", ev, testSecret)
	require.Equal(t, "/webhooks/stripe", req.URL.Path)
	require.Equal(t, map[string]any{"id": "in_raw", "object": "invoice"}, body(req)["data"].(map[string]any)["object"])

	req = idempotencytest.NewSignedRequestJSON("/", stripe.Event{ID: "evt_no_data", Object: "event"}, testSecret)
	m := body(req)
	require.Contains(t, m, "data")
	require.Nil(t, m["data"])

	require.PanicsWithValue(t, "idempotencytest: NewSignedRequestJSON: encoding data.object: json: unsupported type: chan int", func() {
		idempotencytest.NewSignedRequestJSON("/", stripe.Event{ID: "evt_bad_object", Data: &stripe.EventData{
			Object: map[string]any{"id": make(chan int)},
		}}, testSecret)
	})
}
