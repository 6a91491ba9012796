package idempotencytest_test

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestSignatureHeaderSecrets: while a secret rolls, Stripe signs each
// delivery with every active secret, one v1 each. SignatureHeaderSecrets
// builds that header, and a Handler that knows either secret alone accepts
// it, whichever v1 comes first; one that knows neither answers 400.
func TestSignatureHeaderSecrets(t *testing.T) {
	t.Parallel()
	const oldSecret, newSecret = "whsec_rolled_old", "whsec_rolled_new"
	at := time.Now()

	payload := invoicePaid(t, "evt_roll_format", "in_roll_format", "acct_roll")
	ts := "t=" + strconv.FormatInt(at.Unix(), 10)
	v1 := func(secret string) string {
		return strings.TrimPrefix(idempotencytest.SignatureHeader(payload, secret, at), ts+",")
	}
	require.Equal(t, ts+","+v1(oldSecret)+","+v1(newSecret),
		idempotencytest.SignatureHeaderSecrets(payload, at, oldSecret, newSecret), "t=, then one v1 per secret in the order given")
	require.Equal(t, idempotencytest.SignatureHeader(payload, oldSecret, at),
		idempotencytest.SignatureHeaderSecrets(payload, at, oldSecret), "one secret: SignatureHeader's header")
	require.Equal(t, ts, idempotencytest.SignatureHeaderSecrets(payload, at), "no secret: no v1")

	deliver := func(h *idempotency.Handler, payload []byte, header string) (int, string) {
		req := idempotencytest.NewSignedRequest("/", payload, "whsec_replaced")
		req.Header.Set("Stripe-Signature", header)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	for _, tc := range []struct {
		name    string
		secrets []string // the Handler's
		header  []string // the header's, in order
		status  int
	}{
		{"new secret only, old v1 first", []string{newSecret}, []string{oldSecret, newSecret}, 200},
		{"old secret only, old v1 first", []string{oldSecret}, []string{oldSecret, newSecret}, 200},
		{"new secret only, new v1 first", []string{newSecret}, []string{newSecret, oldSecret}, 200},
		{"old secret only, new v1 first", []string{oldSecret}, []string{newSecret, oldSecret}, 200},
		{"neither secret", []string{"whsec_other"}, []string{oldSecret, newSecret}, 400},
		{"no v1", []string{oldSecret, newSecret}, nil, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, credits := newCreditHandler(t, tc.secrets...)
			payload := invoicePaid(t, "evt_roll", "in_roll", "acct_roll")
			status, body := deliver(h, payload, idempotencytest.SignatureHeaderSecrets(payload, time.Now(), tc.header...))
			require.Equal(t, tc.status, status, body)
			if tc.status != 200 {
				require.JSONEq(t, `{"error":"invalid_signature"}`, body)
				require.Zero(t, credits.get("acct_roll"), "nothing applied")
				return
			}
			require.JSONEq(t, `{"outcome":"processed"}`, body)
			require.Equal(t, 100, credits.get("acct_roll"))
		})
	}
}
