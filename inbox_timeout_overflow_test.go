package idempotency_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// NewInbox refuses an InboxConfig.Timeout so long that Timeout plus the
// Lease margin overflows time.Duration. The check Lease >= Timeout + 1s
// wrapped around to a negative bound, so NewInbox accepted such a Timeout
// with the default Lease of a minute; Run's workers then found every
// event's lease shorter than Timeout, gave it back and leased it again,
// for ever, and applied none.
func TestInboxTimeoutOverflowingLeaseMargin(t *testing.T) {
	t.Parallel()
	for _, timeout := range []time.Duration{math.MaxInt64, math.MaxInt64 - time.Millisecond} {
		m := newMemInbox(t, idempotency.InboxConfig{})
		in, err := idempotency.NewInbox(m.store, m.hs, idempotency.InboxConfig{Timeout: timeout, Logger: discardLogger()})
		if err != nil {
			require.ErrorContains(t, err, "InboxConfig.Lease", "Timeout %d", timeout)
			continue
		}
		h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
		require.NoError(t, err)
		ctx, stop := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- in.Run(ctx) }()
		a := idempotencytest.Deliver(h, memInboxPayload(t, "evt_overflow", "in_overflow", memCreated), testSecret)
		require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
		applied := assert.Eventually(t, func() bool {
			r, _, err := in.Lookup(t.Context(), "evt_overflow")
			return err == nil && r.State == idempotency.InboxProcessed
		}, 10*time.Second, time.Millisecond, "Timeout %d with the default Lease: accepted by NewInbox, but Run never applies the event", timeout)
		stop()
		require.NoError(t, recv(t, done, "Run"))
		if !applied {
			t.FailNow()
		}
	}
}
