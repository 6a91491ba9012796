package idempotency_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestHandlerSignatureHeaderBoundIsInclusive: a Stripe-Signature of
// exactly 8 KiB (the bound) that signs the body is verified and the event
// processed; one byte more is refused before any secret is tried. (No
// test failed when a header of exactly 8 KiB was refused.)
func TestHandlerSignatureHeaderBoundIsInclusive(t *testing.T) {
	t.Parallel()
	const bound = 8 << 10
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), registry(), idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(),
	})
	require.NoError(t, err)
	for _, tc := range []struct {
		length int
		code   int
		body   string
	}{
		{bound, 200, `{"outcome":"processed"}`},
		{bound + 1, 400, `{"error":"invalid_signature"}`},
	} {
		payload := invoicePayload(t, "evt_hdr_bound_"+strings.Repeat("x", tc.length-bound), "in_hdr_bound", "acct_1")
		header := idempotencytest.SignatureHeader(payload, testSecret, time.Now())
		// An element of a scheme stripe-go does not read fills the header.
		header += ",x=" + strings.Repeat("a", tc.length-len(header)-len(",x="))
		require.Len(t, header, tc.length)
		req := httptest.NewRequest("POST", "/", strings.NewReader(string(payload)))
		req.Header.Set("Stripe-Signature", header)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Equal(t, tc.code, rec.Code, "a %d-byte header: %s", tc.length, rec.Body)
		require.JSONEq(t, tc.body, rec.Body.String())
	}
}
