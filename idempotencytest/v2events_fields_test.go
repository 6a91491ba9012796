package idempotencytest_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestV2EventsAddKeepsEveryField: the event V2Events answers has the
// ThinEvent's Livemode and Changes, which the handler is given as
// Event.Livemode and Event.Previous, and an event without Data or Changes
// has no data or changes field, as Stripe sends it, not one of null. (No
// test failed when Add sent livemode false whatever Livemode was, dropped
// Changes, or sent "data":null and "changes":null.)
func TestV2EventsAddKeepsEveryField(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	received := meterErrors(hs, 0)
	api := idempotencytest.NewV2Events()
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: slog.New(slog.DiscardHandler),
		StripeClient: idempotencytest.NewStripeClient(thinKey, api),
	})
	require.NoError(t, err)

	ev := meterError("evt_fields_0", "", time.Time{})
	ev.Livemode = true
	ev.Changes = map[string]any{"developer_message_summary": "There were 2 invalid events"}
	a := idempotencytest.Deliver(h, api.Add(ev), testSecret)
	require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
	a = idempotencytest.Deliver(h, api.Add(idempotencytest.ThinEvent{ID: "evt_fields_1", Type: meterErrorType}), testSecret)
	require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)

	evs := received()
	require.Len(t, evs, 2)
	require.True(t, evs[0].Livemode)
	require.JSONEq(t, `{"developer_message_summary":"There were 2 invalid events"}`, string(evs[0].Previous))
	require.False(t, evs[1].Livemode)
	require.Nil(t, evs[1].Previous)
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(evs[1].Raw, &raw))
	require.NotContains(t, raw, "data")
	require.NotContains(t, raw, "changes")
}

// TestV2EventsAnswersOnlyAGetOfAnEvent: V2Events answers GET
// /v2/core/events/{id} alone: another method, no id or a longer path is
// answered 404 Unrecognized request URL, without resource_missing, and
// is not counted as a fetch of the event; an id is matched as written,
// and an event added again replaces the one of its id.
// (No test failed when a POST, /v2/core/events/ or
// /v2/core/events/{id}/more was answered as a fetch, when the answers had
// no Content-Type, when the id was matched in lower case, or when an
// event added again was not kept.)
func TestV2EventsAnswersOnlyAGetOfAnEvent(t *testing.T) {
	t.Parallel()
	api := idempotencytest.NewV2Events()
	api.Add(meterError("evt_1", "", time.Time{}))
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/v2/core/events/evt_1"},
		{http.MethodDelete, "/v2/core/events/evt_1"},
		{http.MethodGet, "/v2/core/events/"},
		{http.MethodGet, "/v2/core/events/evt_1/more"},
	} {
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		require.Equal(t, http.StatusNotFound, rec.Code, "%s %s", c.method, c.path)
		require.Equal(t, "application/json", rec.Header().Get("Content-Type"), "%s %s", c.method, c.path)
		var body struct {
			Error struct {
				Type    string `json:"type"`
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body), "%s %s", c.method, c.path)
		require.Equal(t, []string{"invalid_request_error", "", "Unrecognized request URL"},
			[]string{body.Error.Type, body.Error.Code, body.Error.Message}, "%s %s", c.method, c.path)
	}
	require.Zero(t, api.Fetches("evt_1"))
	require.Zero(t, api.Fetches(""))
	require.Zero(t, api.Fetches("evt_1/more"))

	// An id is matched as written: evt_1 is not EVT_1.
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v2/core/events/EVT_1", nil))
	require.Equal(t, http.StatusNotFound, rec.Code)
	require.Contains(t, rec.Body.String(), `"resource_missing"`)
	require.Equal(t, 1, api.Fetches("EVT_1"))

	rec = httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v2/core/events/evt_1", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	require.Equal(t, 1, api.Fetches("evt_1"))

	// An event added again replaces the one of its id: now of acct_9.
	api.Add(meterError("evt_1", "acct_9", time.Time{}))
	rec = httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v2/core/events/evt_1", nil))
	require.Equal(t, http.StatusNotFound, rec.Code, "the platform's evt_1 was replaced")
	req := httptest.NewRequest(http.MethodGet, "/v2/core/events/evt_1", nil)
	req.Header.Set("Stripe-Context", "acct_9")
	rec = httptest.NewRecorder()
	api.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), `"context":"acct_9"`)
}
