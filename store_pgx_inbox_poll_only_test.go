package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// With PollOnly (behind PgBouncer in transaction pooling mode, where
// LISTEN does not work) Run does not listen: no connection of the pool is
// held listening while it applies events.
func TestPgxInboxPollOnlyDoesNotListen(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	p := newPgInbox(t, b, idempotency.InboxConfig{PollOnly: true, Workers: 1, IngestWorkers: 1})
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.inbox.Run(ctx) }()
	defer func() {
		stop()
		require.NoError(t, recv(t, done, "Run"))
	}()
	p.deliver(t, "evt_poll_only", "in_poll_only", 0)
	require.Eventually(t, func() bool {
		st, err := p.inbox.Stats(t.Context())
		return err == nil && st.Counts[idempotency.InboxProcessed] == 1
	}, 10*time.Second, time.Millisecond, "the event is applied")
	require.Empty(t, listeners(t, b), "no connection listens")
}
