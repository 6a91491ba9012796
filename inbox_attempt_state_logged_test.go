package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// An inbox attempt's log line gives the state it left the event in: the
// attempt that dead-letters an event is logged outcome=failed, as each
// retry before it is, and only the state tells an operator reading the
// logs that this one was the last.
func TestInboxAttemptLogGivesTheState(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[struct{}]) error {
		return errors.New("the ledger API is down")
	})
	logger, logs := testLogger()
	inbox, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{
		Logger: logger, MaxAttempts: 2, Backoff: func(int) time.Duration { return 0 },
	})
	require.NoError(t, err)
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, eventPayload(t, "invoice.paid", "evt_state_logged", nil), testSecret).Outcome)
	for range 2 {
		_, err := inbox.WorkDue(t.Context())
		require.NoError(t, err)
	}
	var states []string
	for line := range strings.Lines(logs.String()) {
		var rec struct{ Msg, Outcome, State string }
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if rec.Msg == "stripe webhook: inbox attempt" {
			require.Equal(t, "failed", rec.Outcome)
			states = append(states, rec.State)
		}
	}
	require.Equal(t, []string{"failed", "dead_letter"}, states, "the states of the two attempts' log lines")
}
