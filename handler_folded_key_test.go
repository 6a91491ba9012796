package idempotency_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestEnvelopeKeyInAnotherCaseRejected: a signed event with a key that is
// one the Handler reads (id, type, data, data.object.id, ...) in another
// letter case ("ID", "api_verſion" with U+017F) is refused, 400
// invalid_event, nothing stored, in both modes. encoding/json (stripe-go's
// Event, the handler's own decode of data.object or of Raw) matches keys
// case-insensitively and takes the last, while the Handler claims,
// routes and orders by the exact key: the event would be deduplicated on
// one id and seen by the handler's code under another.
func TestEnvelopeKeyInAnotherCaseRejected(t *testing.T) {
	t.Parallel()
	base := eventPayload(t, "invoice.paid", "evt_folded", nil)
	var ev map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(base, &ev))
	// top appends a member to the event's top level.
	top := func(member string) []byte {
		return []byte(strings.TrimSuffix(string(base), "}") + "," + member + "}")
	}
	cases := map[string]func() []byte{
		"ID":          func() []byte { return top(`"ID":"evt_other"`) },
		"Type":        func() []byte { return top(`"Type":"customer.deleted"`) },
		"api_verſion": func() []byte { return top(`"api_verſion":"2020-08-27"`) },
		"data.Object": func() []byte {
			data := strings.TrimSuffix(string(ev["data"]), "}")
			return replaceData(t, ev, []byte(data+`,"Object":{"id":"in_other","object":"invoice"}}`))
		},
		"data.object.ID": func() []byte {
			var data map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(ev["data"], &data))
			data["object"] = []byte(strings.TrimSuffix(string(data["object"]), "}") + `,"ID":"in_other"}`)
			b, err := json.Marshal(data)
			require.NoError(t, err)
			return replaceData(t, ev, b)
		},
	}
	for name, body := range cases {
		for _, inbox := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "/sync", true: "/inbox"}[inbox], func(t *testing.T) {
				t.Parallel()
				payload := body()
				require.True(t, json.Valid(payload))
				var seen stripe.Event // what stripe-go makes of the body
				require.NoError(t, json.Unmarshal(payload, &seen))

				store := idempotency.NewMemoryStore()
				hs := idempotency.NewHandlers()
				ran := false
				idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
					ran = true
					return nil
				})
				var res idempotency.Result
				cfg := idempotency.Config{Secrets: []string{testSecret}, OnResult: func(r idempotency.Result) { res = r }}
				var h *idempotency.Handler
				var in *idempotency.Inbox
				var err error
				if inbox {
					in, err = idempotency.NewInbox(store, hs, idempotency.InboxConfig{})
					require.NoError(t, err)
					h, err = in.Handler(cfg)
				} else {
					h, err = idempotency.NewHandler(store, hs, cfg)
				}
				require.NoError(t, err)
				a := idempotencytest.Deliver(h, payload, testSecret)
				require.Equal(t, 400, a.Status, "stripe-go reads id %q, type %q, object %q: %s",
					seen.ID, seen.Type, objectID(seen), a.Body)
				require.JSONEq(t, `{"error":"invalid_event"}`, a.Body)
				require.ErrorIs(t, res.Err, idempotency.ErrMalformedEvent)
				require.NotContains(t, res.Err.Error(), "other", "the error quotes the body")
				require.False(t, ran)
				_, found, err := store.LookupEvent(t.Context(), "evt_folded")
				require.NoError(t, err)
				require.False(t, found)
				if inbox {
					_, found, err := in.Lookup(t.Context(), "evt_folded")
					require.NoError(t, err)
					require.False(t, found)
				}
			})
		}
	}
}

// replaceData returns the event ev with data replaced.
func replaceData(t *testing.T, ev map[string]json.RawMessage, data []byte) []byte {
	t.Helper()
	out := make(map[string]json.RawMessage, len(ev))
	for k, v := range ev {
		out[k] = v
	}
	out["data"] = data
	b, err := json.Marshal(out)
	require.NoError(t, err)
	return b
}

func objectID(ev stripe.Event) string {
	if ev.Data == nil {
		return ""
	}
	id, _ := ev.Data.Object["id"].(string)
	return id
}
