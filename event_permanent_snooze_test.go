package idempotency_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// Permanent and Snooze are for tasks: returned from an event handler they
// are ordinary errors, as their godoc says. The synchronous Handler answers
// 500; the inbox records a failed attempt, counted, due again after the
// backoff (not dead-lettered, not snoozed for d).
func TestEventHandlerPermanentAndSnoozeAreOrdinaryErrors(t *testing.T) {
	t.Parallel()
	for name, fail := range map[string]error{
		"Permanent": idempotency.Permanent(errors.New("never")),
		"Snooze":    idempotency.Snooze(time.Hour),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
				return fail
			})
			payload := invoicePayload(t, "evt_"+name, "in_"+name, "acct_1")

			h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			require.Equal(t, http.StatusInternalServerError, idempotencytest.Deliver(h, payload, testSecret).Status)

			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{
				Now: clock.Now, Logger: discardLogger(), Backoff: func(int) time.Duration { return time.Second },
			})
			require.NoError(t, err)
			ih, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(ih, payload, testSecret).Outcome)
			n, err := in.WorkDue(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, n)
			rec, found, err := in.Lookup(t.Context(), "evt_"+name)
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, idempotency.InboxFailed, rec.State)
			require.Equal(t, 1, rec.Attempt)
			require.Equal(t, clock.Now().Add(time.Second), rec.NextAttemptAt, "due after the backoff")
			require.Equal(t, fail.Error(), rec.LastError)
		})
	}
}
