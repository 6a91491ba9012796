package idempotency_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

type nilPointerErr struct{ msg string }

func (e *nilPointerErr) Error() string { return e.msg }

// A handler that panics with a typed nil error (a *T that implements error)
// or an error whose Error method panics: fmt, which the message used before,
// prints "<nil>" or a PANIC note; panicText calls Error itself and panics
// again, while the library reports the first panic.
func TestPanicTextTypedNilError(t *testing.T) {
	var v error = (*nilPointerErr)(nil)
	p := &idempotency.PanicError{Value: v}
	var msg string
	require.NotPanics(t, func() { msg = p.Error() })
	require.Contains(t, msg, "handler panicked")
}

// End to end: a handler's panic with a typed nil error is answered 500 and
// reported, as any other panic; here the report itself panics.
func TestHandlerPanicTypedNilError(t *testing.T) {
	b := newBench(t, idempotency.Config{}, failing(func(context.Context) error {
		var e *nilPointerErr
		panic(e)
	}))
	var rec *httptest.ResponseRecorder
	require.NotPanics(t, func() {
		rec = b.serve(idempotencytest.NewSignedRequest("/", eventPayload(t, "invoice.paid", "evt_pnil", paid), testSecret))
	})
	require.Equal(t, 500, rec.Code)
}

// Through the inbox: WorkDue records the attempt's error with err.Error(),
// outside any recover; the typed nil error's panic takes the worker (and,
// in a Start'ed worker goroutine, the process) down.
func TestInboxPanicTypedNilError(t *testing.T) {
	store := idempotency.NewMemoryStore()
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
		var e *nilPointerErr
		panic(e)
	})
	inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeQueued,
		idempotencytest.Deliver(h, invoicePayload(t, "evt_pnil_inbox", "in_pnil", "acct_1"), testSecret).Outcome)
	require.NotPanics(t, func() {
		n, err := inbox.WorkDue(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
	})
}
