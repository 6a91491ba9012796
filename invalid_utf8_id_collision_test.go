package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// An id with invalid UTF-8, sent as raw bytes or as an unpaired surrogate
// escape, decodes (as encoding/json decodes it) to U+FFFD: two distinct
// signed events would be claimed under one id, and the second answered
// duplicate and never applied. The answer table says such an event is
// refused 400 invalid_event; so is a data.object.id of that kind, the key
// of guards and of the inbox's per-object order.
func TestInvalidUTF8IDsDoNotCollide(t *testing.T) {
	t.Parallel()
	for name, pair := range map[string][2][2]string{
		"raw bytes in id":             {{"evt_\xfe", "in_1"}, {"evt_\xff", "in_1"}},
		"lone surrogates in id":       {{`evt_\ud800`, "in_1"}, {`evt_\udc00`, "in_1"}},
		"high surrogate pair in id":   {{`evt_\ud800\ud800`, "in_1"}, {`evt_\udbff\udbff`, "in_1"}},
		"raw bytes in object id":      {{"evt_a", "in_\xfe"}, {"evt_b", "in_\xff"}},
		"lone surrogate in object id": {{"evt_a", `in_\ud800`}, {"evt_b", `in_\udfff`}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[struct{}]) error { return nil })
			h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			for _, ids := range pair {
				body := `{"id":"` + ids[0] + `","object":"event","type":"invoice.paid","api_version":"2025-08-27.basil",` +
					`"data":{"object":{"id":"` + ids[1] + `","object":"invoice"}}}`
				a := idempotencytest.Deliver(h, []byte(body), testSecret)
				require.Equal(t, 400, a.Status, "%q: %s", body, a.Body)
				require.JSONEq(t, `{"error":"invalid_event"}`, a.Body)
			}
		})
	}
	// A U+FFFD that is sent, as itself or escaped, is valid text.
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[struct{}]) error { return nil })
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	for _, id := range []string{"evt_\uFFFD", `evt_\ufffd_2`, `evt_\ud83d\ude00`} {
		body := `{"id":"` + id + `","object":"event","type":"invoice.paid","api_version":"2025-08-27.basil","data":{"object":{"id":"in_1"}}}`
		a := idempotencytest.Deliver(h, []byte(body), testSecret)
		require.Equal(t, 200, a.Status, "%q: %s", body, a.Body)
	}
}
