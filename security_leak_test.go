package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// payloadMarker stands for a customer's email in a payload: no log line,
// Result.Err or stored LastError may carry it.
const payloadMarker = "leak-marker-7c31@example.com"

// A handler that panics with the event (or its object) has failed; the
// panic's value is the payload, and it must not reach the log, Result.Err
// or the inbox's LastError, as a returned error of the package's own never
// does. The stack is logged, which is what finds the bug.
func TestPanicWithTheEventKeepsThePayloadOut(t *testing.T) {
	t.Parallel()
	md := map[string]string{"account_id": "acct_1", "email": payloadMarker}
	for _, mode := range []string{"event", "object", "after-commit"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			logger, logs := testLogger()
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
				switch mode {
				case "event":
					panic(ev)
				case "object":
					panic(ev.Object)
				default:
					tx.AfterCommit(func(context.Context) { panic(ev.Object.Metadata) })
				}
				return nil
			})
			var res idempotency.Result
			h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
				Secrets: []string{testSecret}, Logger: logger, OnResult: func(r idempotency.Result) { res = r },
			})
			require.NoError(t, err)
			a := idempotencytest.Deliver(h, eventPayload(t, "invoice.paid", "evt_leak", md), testSecret)
			require.NotContains(t, a.Body, payloadMarker)
			if mode != "after-commit" {
				require.Equal(t, 500, a.Status)
				require.Error(t, res.Err)
				require.NotContains(t, res.Err.Error(), payloadMarker, "Result.Err")
			} else {
				require.Equal(t, 200, a.Status)
				require.Len(t, res.AfterCommitPanics, 1)
				require.NotContains(t, res.AfterCommitPanics[0].Error(), payloadMarker)
			}
			require.NotContains(t, logs.String(), payloadMarker, "the log")
		})
	}
	t.Run("inbox", func(t *testing.T) {
		t.Parallel()
		logger, logs := testLogger()
		hs := idempotency.NewHandlers()
		idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
			panic(ev.Object)
		})
		clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
		inbox, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{
			Now: clock.Now, MaxAttempts: 1, Logger: logger,
		})
		require.NoError(t, err)
		h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: logger})
		require.NoError(t, err)
		require.Equal(t, 200, idempotencytest.Deliver(h, eventPayload(t, "invoice.paid", "evt_leak", md), testSecret).Status)
		_, err = inbox.WorkDue(t.Context())
		require.NoError(t, err)
		r, ok, err := inbox.Lookup(t.Context(), "evt_leak")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, idempotency.InboxDeadLetter, r.State)
		require.Contains(t, r.LastError, "panicked")
		require.NotContains(t, r.LastError, payloadMarker, "the dead letter's LastError")
		require.NotContains(t, logs.String(), payloadMarker, "the log")
	})
}
