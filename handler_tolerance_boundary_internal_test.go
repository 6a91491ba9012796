package idempotency

import (
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82/webhook"
)

// Config.Tolerance is how far the timestamp may lie from the clock, in
// the past or in the future: exactly that far is accepted, a nanosecond
// more is refused, both ways. (No test failed when the bound itself was
// refused: a delivery cannot hit it to the nanosecond, verify's clock can.)
func TestHandlerToleranceBoundIsInclusiveBothWays(t *testing.T) {
	const secret = "whsec_tolerance"
	h, err := newHandler(NewMemoryStore(), Config{Secrets: []string{secret}, Tolerance: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte(`{"id":"evt_tolerance","object":"event"}`)
	// Signed now, so that stripe-go's own check of the age, on the real
	// clock, passes: only verify's comparison decides.
	ts := time.Unix(time.Now().Unix(), 0)
	header := fmt.Sprintf("t=%d,v1=%s", ts.Unix(), hex.EncodeToString(webhook.ComputeSignature(ts, payload, secret)))

	for _, c := range []struct {
		name string
		now  time.Time
		ok   bool
	}{
		{"Tolerance after the timestamp", ts.Add(time.Minute), true},
		{"a nanosecond more after", ts.Add(time.Minute + time.Nanosecond), false},
		{"Tolerance before the timestamp", ts.Add(-time.Minute), true},
		{"a nanosecond more before", ts.Add(-time.Minute - time.Nanosecond), false},
	} {
		err := h.verify(payload, header, c.now)
		switch {
		case c.ok && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case !c.ok && !errors.Is(err, ErrTimestampOutsideTolerance):
			t.Errorf("%s: got %v, want ErrTimestampOutsideTolerance", c.name, err)
		}
	}
}
