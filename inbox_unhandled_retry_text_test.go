package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxUnhandledRetryTextSaysUntil: the error of an attempt by a
// process without a handler for the event's type says until when the
// event is retried, RetryUnhandledFor after it was received, not that it
// was retried for that long, which its first attempt, a millisecond after
// the receipt, read as; and at the last attempt, that it was
// dead-lettered at MaxAttempts before that time, as the LastError of a
// dead letter, on both stores.
func TestInboxUnhandledRetryTextSaysUntil(t *testing.T) {
	t.Parallel()
	const (
		failed = "idempotency: no handler for the event's type in this process: invoice.paid " +
			"(retried until RetryUnhandledFor, 1h0m0s, after it was received, for a process that has the handler)"
		dead = "idempotency: no handler for the event's type in this process: invoice.paid " +
			"(dead-lettered at MaxAttempts, 2, before RetryUnhandledFor, 1h0m0s, after it was received)"
	)
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			cfg := idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger(), MaxAttempts: 2}
			newRelease, h, oldRelease := rollingReleases(t, store, cfg, map[string]int{})
			a := idempotencytest.Deliver(h, invoicePayload(t, "evt_unh_text", "in_unh_text", "acct_1"), testSecret)
			require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)

			workDue(t, oldRelease, 1)
			rec := mustLookup(t, newRelease, "evt_unh_text")
			require.Equal(t, idempotency.InboxFailed, rec.State)
			require.Equal(t, failed, rec.LastError)

			clock.Advance(2 * time.Second) // past the first backoff, 1 s ±10%
			workDue(t, oldRelease, 1)
			rec = mustLookup(t, newRelease, "evt_unh_text")
			require.Equal(t, idempotency.InboxDeadLetter, rec.State)
			require.Equal(t, dead, rec.LastError)
		})
	}
}
