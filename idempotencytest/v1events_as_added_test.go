package idempotencytest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestV1EventsListsAPayloadAsAdded: V1Events lists the bytes Add kept,
// as its doc says, indented as Stripe sends a delivery and with the <, >
// and & of a description as written, not compacted and escaped by
// encoding/json: the Handler's Event.Raw of a recovered event is then
// the payload the test wrote.
func TestV1EventsListsAPayloadAsAdded(t *testing.T) {
	t.Parallel()
	payload := []byte(`{
  "id": "evt_1",
  "object": "event",
  "type": "invoice.paid",
  "created": 1772352000,
  "data": {"object": {"id": "in_1", "object": "invoice", "description": "<b>R&D</b>"}}
}`)
	f := idempotencytest.NewV1Events()
	f.AddUndelivered(payload)
	rec := httptest.NewRecorder()
	f.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/events", nil))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var page struct {
		Object  string            `json:"object"`
		Data    []json.RawMessage `json:"data"`
		HasMore bool              `json:"has_more"`
		URL     string            `json:"url"`
	}
	require.NoError(t, json.NewDecoder(bytes.NewReader(rec.Body.Bytes())).Decode(&page), rec.Body.String())
	require.Equal(t, "list", page.Object)
	require.False(t, page.HasMore)
	require.Equal(t, "/v1/events", page.URL)
	require.Len(t, page.Data, 1)
	require.Equal(t, string(payload), string(page.Data[0]))
}
