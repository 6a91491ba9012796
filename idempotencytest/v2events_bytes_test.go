package idempotencytest_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestV2EventsAddRefusesBytes: Add panics, naming the field, on Data or
// Changes given as a []byte (JSON read from a file, say), which
// encoding/json would encode as a base64 string, so that the handler's
// data failed to decode as a string; json.RawMessage of the same bytes is
// taken as the JSON it is.
func TestV2EventsAddRefusesBytes(t *testing.T) {
	t.Parallel()
	api := idempotencytest.NewV2Events()
	b := []byte(`{"developer_message_summary":"There is 1 invalid event"}`)
	require.PanicsWithValue(t, "idempotencytest: V2Events.Add: ThinEvent.Data is a []byte, which encoding/json encodes as a base64 string: give JSON as a json.RawMessage", func() {
		api.Add(idempotencytest.ThinEvent{ID: "evt_1", Type: meterErrorType, Data: b})
	})
	require.PanicsWithValue(t, "idempotencytest: V2Events.Add: ThinEvent.Changes is a []byte, which encoding/json encodes as a base64 string: give JSON as a json.RawMessage", func() {
		api.Add(idempotencytest.ThinEvent{ID: "evt_1", Type: meterErrorType, Changes: b})
	})
	require.NotPanics(t, func() {
		api.Add(idempotencytest.ThinEvent{ID: "evt_1", Type: meterErrorType, Data: json.RawMessage(b), Changes: json.RawMessage(b)})
	})
}
