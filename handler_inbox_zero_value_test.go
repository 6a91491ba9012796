package idempotency_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

// TestHandlerNotMadeByNewHandlerIsRefused: a Handler that NewHandler or
// Inbox.Handler did not return (a zero or nil one, declared where their
// result was meant) answers every request 500 processing_failed, as a
// failed delivery (Stripe retries it), and logs it at Error through
// slog.Default naming the constructors: it panicked on a nil pointer.
// Not parallel: it reads slog.Default, which it sets.
func TestHandlerNotMadeByNewHandlerIsRefused(t *testing.T) {
	prev := slog.Default()
	t.Cleanup(func() { slog.SetDefault(prev) })
	for name, h := range map[string]*idempotency.Handler{"zero": {}, "nil": nil} {
		var logs syncBuffer
		slog.SetDefault(slog.New(slog.NewJSONHandler(&logs, nil)))
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", strings.NewReader(`{"id":"evt_1"}`))
		require.NotPanics(t, func() { h.ServeHTTP(w, r) }, name)
		require.Equal(t, http.StatusInternalServerError, w.Code, name)
		require.JSONEq(t, `{"error":"processing_failed"}`, w.Body.String(), name)
		require.Equal(t, "application/json", w.Header().Get("Content-Type"), name)
		var lines []string
		for l := range strings.Lines(logs.String()) {
			if strings.Contains(l, "idempotency: Handler.ServeHTTP: a Handler not made by NewHandler or Inbox.Handler") {
				lines = append(lines, l)
			}
		}
		require.Len(t, lines, 1, "one line for the request: %s", name)
		require.Contains(t, lines[0], `"level":"ERROR"`, name)
		require.Contains(t, lines[0], `"status":500`, name)
		require.NotContains(t, lines[0], "evt_1", "nothing of the body")
	}
}

// TestHandlerNotMadeByNewHandlerCannotRecover: Recover on a Handler that
// NewHandler or Inbox.Handler did not return (a zero or nil one) fails,
// naming them, before it checks its client or asks Stripe anything: it
// panicked on a nil pointer once its checks passed.
func TestHandlerNotMadeByNewHandlerCannotRecover(t *testing.T) {
	t.Parallel()
	client := stripe.NewClient("sk_test_123")
	for name, h := range map[string]*idempotency.Handler{"zero": {}, "nil": nil} {
		var err error
		require.NotPanics(t, func() { _, err = h.Recover(t.Context(), client, idempotency.RecoverOptions{}) }, name)
		require.EqualError(t, err, "idempotency: Handler.Recover: a Handler not made by NewHandler or Inbox.Handler", name)
	}
}

// TestInboxNotMadeByNewInboxIsRefused: every method of an Inbox that
// NewInbox did not return (a zero or nil one) fails, naming NewInbox and
// itself: each panicked on a nil pointer.
func TestInboxNotMadeByNewInboxIsRefused(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]*idempotency.Inbox{"zero": {}, "nil": nil} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			refused := refusedNotMade(t, "Inbox", "an Inbox not made by NewInbox")
			refused("Handler", func() error {
				h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}})
				require.Nil(t, h)
				return err
			})
			refused("Run", func() error { return in.Run(ctx) })
			refused("WorkDue", func() error { _, err := in.WorkDue(ctx); return err })
			refused("Redrive", func() error { _, err := in.Redrive(ctx, idempotency.RedriveFilter{}); return err })
			refused("RedriveByKind", func() error { _, _, err := in.RedriveByKind(ctx, idempotency.RedriveFilter{}); return err })
			refused("Stats", func() error { _, err := in.Stats(ctx); return err })
			refused("Lookup", func() error { _, _, err := in.Lookup(ctx, "evt_1"); return err })
			refused("HeldBy", func() error { _, err := in.HeldBy(ctx, "evt_1"); return err })
			refused("List", func() error { _, err := in.List(ctx, idempotency.InboxFilter{}); return err })
			refused("Payload", func() error { _, _, err := in.Payload(ctx, "evt_1"); return err })
			refused("Forget", func() error { _, err := in.Forget(ctx, "evt_1"); return err })
		})
	}
}

// refusedNotMade returns the check that a method of typ (its name in the
// errors) on a value its constructor did not make returns, without
// panicking, the error "idempotency: typ.method: notMade".
func refusedNotMade(t *testing.T, typ, notMade string) func(method string, call func() error) {
	return func(method string, call func() error) {
		t.Helper()
		var err error
		require.NotPanics(t, func() { err = call() }, method)
		require.EqualError(t, err, "idempotency: "+typ+"."+method+": "+notMade, method)
	}
}
