package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestHandlerReturningTypedNilErrorFails: an event handler that returns a
// typed nil error (a nil *T whose Error method dereferences it) fails the
// event, answered 500 by the synchronous Handler and recorded as a failed
// attempt by the inbox, with a LastError that names the type; neither
// panics.
func TestHandlerReturningTypedNilErrorFails(t *testing.T) {
	t.Parallel()
	var e *nilPointerErr
	requireHandlerErrorFails(t, e, "*idempotency_test.nilPointerErr")
}

// TestHandlerWrappingTypedNilOfPackageErrorFails: an event handler's error
// that wraps a typed nil of one of the package's error types
// (fmt.Errorf("...: %w", (*idempotency.SkipError)(nil))) has a text, but
// the package reads the types it finds in an error (a skip's reason, a
// panic's stack) and unwraps them: it fails the event as any other error,
// as a typed nil does, with a LastError that names both types.
func TestHandlerWrappingTypedNilOfPackageErrorFails(t *testing.T) {
	t.Parallel()
	for _, inner := range []error{
		(*idempotency.SkipError)(nil), (*idempotency.PanicError)(nil),
		(*idempotency.PermanentError)(nil), (*idempotency.SnoozeError)(nil),
	} {
		name := fmt.Sprintf("%T", inner)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			requireHandlerErrorFails(t, fmt.Errorf("downstream: %w", inner), "*fmt.wrapError", name)
		})
	}
}

// TestHandlerErrorWhoseUnwrapPanicsFails: an event handler's error whose
// Unwrap method panics (a typed nil wrapper whose Error does not
// dereference it) fails the event as a typed nil does, with a LastError
// that names its type and says which method panics.
func TestHandlerErrorWhoseUnwrapPanicsFails(t *testing.T) {
	t.Parallel()
	var e *unwrapNilErr
	requireHandlerErrorFails(t, e, "*idempotency_test.unwrapNilErr whose Unwrap method panics")
}

// TestHandlerErrorWrappingItselfFails: an event handler's error whose
// Unwrap returns the error itself fails the event, with a LastError that
// names its type: errors.Is, which the package asks of every failure,
// would walk its chain for ever, and the worker hang.
func TestHandlerErrorWrappingItselfFails(t *testing.T) {
	t.Parallel()
	requireHandlerErrorFails(t, &selfWrapErr{}, "*idempotency_test.selfWrapErr whose Unwrap chain is over 100 errors deep")
}

// selfWrapErr is an error whose Unwrap returns itself.
type selfWrapErr struct{}

func (e *selfWrapErr) Error() string { return "wraps itself" }

func (e *selfWrapErr) Unwrap() error { return e }

// unwrapNilErr is an error type whose Error holds for a nil receiver and
// whose Unwrap does not.
type unwrapNilErr struct{ err error }

func (e *unwrapNilErr) Error() string { return "wrapper" }

func (e *unwrapNilErr) Unwrap() error { return e.err }

// requireHandlerErrorFails requires an event handler that returns
// returned to fail its event without a panic: answered 500 by the
// synchronous Handler, a failed attempt of the inbox whose LastError holds
// each of wants.
func requireHandlerErrorFails(t *testing.T, returned error, wants ...string) {
	t.Helper()
	store := idempotency.NewMemoryStore()
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
		return returned
	})
	cfg := idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()}

	h, err := idempotency.NewHandler(store, hs, cfg)
	require.NoError(t, err)
	var a idempotencytest.Answer
	require.NotPanics(t, func() {
		a = idempotencytest.Deliver(h, invoicePayload(t, "evt_nil_sync", "in_nil_sync", "acct_1"), testSecret)
	})
	require.Equal(t, http.StatusInternalServerError, a.Status)

	inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	ih, err := inbox.Handler(cfg)
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeQueued,
		idempotencytest.Deliver(ih, invoicePayload(t, "evt_nil_inbox", "in_nil_inbox", "acct_1"), testSecret).Outcome)
	require.NotPanics(t, func() {
		n, err := inbox.WorkDue(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
	})
	rec, ok, err := inbox.Lookup(t.Context(), "evt_nil_inbox")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, idempotency.InboxFailed, rec.State)
	for _, want := range wants {
		require.Contains(t, rec.LastError, want)
	}
}
