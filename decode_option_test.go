package idempotency_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/decode"
)

// decodeProbe is a stripe.Invoice without its UnmarshalJSON, a type no
// other test registers, so that the fast decoder's count for it is this
// test's alone.
type decodeProbe stripe.Invoice

// TestDisableFastDecoder: by default data.object goes through the
// compiled decoder; Config.DisableFastDecoder sends it to encoding/json
// alone. Both give json.Unmarshal's value.
func TestDisableFastDecoder(t *testing.T) {
	t.Parallel()
	const secret = "whsec_decode_option"
	payload, err := os.ReadFile(filepath.Join("testdata", "stripe-events", "invoice.paid.json"))
	require.NoError(t, err)
	var ev struct {
		Data struct {
			Object json.RawMessage `json:"object"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(payload, &ev))
	var want *decodeProbe
	require.NoError(t, json.Unmarshal(ev.Data.Object, &want))
	fastDecodes := decode.CountFast[*decodeProbe]()

	// Sequential: both cases read the one count.
	for _, disable := range []bool{false, true} {
		t.Run(fmt.Sprintf("DisableFastDecoder=%v", disable), func(t *testing.T) {
			hs := idempotency.NewHandlers()
			var got *decodeProbe
			idempotency.On(hs, "invoice.paid", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*decodeProbe]) error {
				got = ev.Object
				return nil
			})
			h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
				Secrets:            []string{secret},
				DisableFastDecoder: disable,
				Logger:             slog.New(slog.DiscardHandler),
			})
			require.NoError(t, err)

			now := time.Now()
			req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(payload))
			req.Header.Set("Stripe-Signature", fmt.Sprintf("t=%d,v1=%s", now.Unix(), hex.EncodeToString(webhook.ComputeSignature(now, payload, secret))))
			rec := httptest.NewRecorder()
			before := fastDecodes()
			h.ServeHTTP(rec, req)
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			require.JSONEq(t, `{"outcome":"processed"}`, rec.Body.String())

			fast := int64(1)
			if disable {
				fast = 0
			}
			require.Equal(t, fast, fastDecodes()-before, "decodes on the fast path")
			require.Equal(t, want, got)
			require.Equal(t, "cus_QXg1o8vcGmoR32", got.Customer.ID, "the comparison is not of two empty values")
		})
	}
}
