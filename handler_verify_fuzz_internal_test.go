package idempotency

import (
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82/webhook"
)

// FuzzVerify attacks the Stripe-Signature check with headers built around
// a timestamp offset from the clock and a v1 signature by one of the
// secrets, or by none, between arbitrary text: many v1 entries, several
// t= elements, timestamps far in the past or the future or out of int64's
// range, garbage. For any input verify never panics, and:
//   - it accepts only a header that stripe-go's webhook package verifies
//     for one of the secrets, ignoring the age, and whose timestamp (the
//     last t=) lies within Config.Tolerance of the clock, either way;
//   - it accepts the plain header (t=,v1= by a secret, within Tolerance);
//   - no error text carries a secret or the payload.
//
// CI runs its seeds (testdata/fuzz/FuzzVerify and those below) only.
func FuzzVerify(f *testing.F) {
	secrets := []string{"whsec_fuzz_first", "whsec_fuzz_second"}
	f.Add(int64(0), uint8(0), "", "", []byte(`{"id":"evt_1"}`))
	f.Add(int64(-299), uint8(1), "", ",v0=abc", []byte(`{}`))
	f.Add(int64(301), uint8(0), "", "", []byte(`{}`))
	f.Add(int64(0), uint8(2), "", "", []byte(`x`))
	f.Add(int64(0), uint8(0), "v1=00,v1=zz,", ",t=9223372036854775807", []byte(`{}`))
	f.Add(int64(0), uint8(0), "t=-9223372036854775808,", "", []byte(`{}`))
	f.Add(int64(0), uint8(1), "", ",t=1", []byte(`{}`))
	f.Add(int64(0), uint8(0), " ", ",v1=a=b", []byte(`{}`))
	f.Add(int64(0), uint8(0), strings.Repeat("v1="+strings.Repeat("0", 64)+",", 100), "", []byte(`{}`))
	f.Fuzz(func(t *testing.T, offset int64, signer uint8, prefix, suffix string, payload []byte) {
		h, err := newHandler(NewMemoryStore(), Config{Secrets: secrets, Tolerance: 5 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Unix(time.Now().Unix(), 0)
		ts := time.Unix(now.Unix()+offset, 0)
		sig := strings.Repeat("ab", 32) // no secret's
		if int(signer) < len(secrets) {
			sig = hex.EncodeToString(webhook.ComputeSignature(ts, payload, secrets[signer]))
		}
		header := prefix + "t=" + strconv.FormatInt(ts.Unix(), 10) + ",v1=" + sig + suffix
		err = h.verify(payload, header, now)
		if err != nil {
			for _, s := range append([]string{string(payload)}, secrets...) {
				if len(s) >= 8 && strings.Contains(err.Error(), s) {
					t.Fatalf("the error %q quotes a secret or the payload", err)
				}
			}
		}
		plain := prefix == "" && suffix == "" && int(signer) < len(secrets) && offset >= -300 && offset <= 300
		if plain && err != nil {
			t.Fatalf("the plain header %q was refused: %v", header, err)
		}
		if err != nil {
			return
		}
		last, ok := signatureTimestamp(header)
		if !ok {
			t.Fatalf("accepted %q without a timestamp", header)
		}
		if d := now.Sub(last); d > 5*time.Minute || d < -5*time.Minute {
			t.Fatalf("accepted %q, its timestamp %s from the clock", header, d)
		}
		for _, s := range secrets {
			if webhook.ValidatePayloadIgnoringTolerance(payload, header, s) == nil {
				return
			}
		}
		t.Fatalf("accepted %q, which stripe-go verifies for no secret", header)
	})
}
