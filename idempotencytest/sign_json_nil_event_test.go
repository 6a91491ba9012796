package idempotencytest_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestNewSignedRequestJSONNilEvent: a nil event (a nil *stripe.Event, map
// or interface) encodes to "null", which is no Stripe event. It is the
// caller's mistake, and NewSignedRequestJSON panics saying so, as
// httptest.NewRequest does on a bad target, rather than hand back a
// signed "null" that a handler answers 400 to: a test expecting a refusal
// for its own reason would pass on it.
func TestNewSignedRequestJSONNilEvent(t *testing.T) {
	t.Parallel()
	for _, event := range []any{nil, (*stripe.Event)(nil), map[string]any(nil)} {
		require.PanicsWithValue(t, "idempotencytest: NewSignedRequestJSON: event is nil", func() {
			idempotencytest.NewSignedRequestJSON("/", event, testSecret)
		}, "%#v", event)
	}
}
