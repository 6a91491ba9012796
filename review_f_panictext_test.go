package idempotency_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

type reviewFNilErr struct{ msg string }

func (e *reviewFNilErr) Error() string { return e.msg }

// A handler that panics with a typed nil error (a *T that implements error)
// or an error whose Error method panics: fmt, which the message used before,
// prints "<nil>" or a PANIC note; panicText calls Error itself and panics
// again, while the library reports the first panic.
func TestReviewFPanicTextTypedNilError(t *testing.T) {
	var v error = (*reviewFNilErr)(nil)
	p := &idempotency.PanicError{Value: v}
	var msg string
	require.NotPanics(t, func() { msg = p.Error() })
	require.Contains(t, msg, "handler panicked")
}

// End to end: a handler's panic with a typed nil error is answered 500 and
// reported, as any other panic; here the report itself panics.
func TestReviewFHandlerPanicTypedNilError(t *testing.T) {
	b := newBench(t, idempotency.Config{}, failing(func(context.Context) error {
		var e *reviewFNilErr
		panic(e)
	}))
	var rec *httptest.ResponseRecorder
	require.NotPanics(t, func() {
		rec = b.serve(idempotencytest.NewSignedRequest("/", eventPayload(t, "invoice.paid", "evt_pnil", paid), testSecret))
	})
	require.Equal(t, 500, rec.Code)
}
