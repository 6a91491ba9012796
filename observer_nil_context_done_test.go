package idempotency_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestObserverNilContextKeepsDone: a Delivery or an Attempt that returns a
// nil context (nothing to add to the one it was given) leaves the context
// as it was, and its done is still called once, as their docs promise: a
// span it started ends. Since the Observer's panics are recovered, a nil
// context dropped the done too, and the span was left open.
func TestObserverNilContextKeepsDone(t *testing.T) {
	t.Parallel()
	var deliveries, attempts []idempotency.Result
	o := &idempotency.Observer{
		Delivery: func(context.Context, *http.Request) (context.Context, func(idempotency.Result)) {
			return nil, func(r idempotency.Result) { deliveries = append(deliveries, r) }
		},
		Attempt: func(context.Context, idempotency.InboxRecord, string) (context.Context, func(idempotency.Result)) {
			return nil, func(r idempotency.Result) { attempts = append(attempts, r) }
		},
	}
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, _ idempotency.Tx, _ idempotency.Event[json.RawMessage]) error {
		require.NotNil(t, ctx.Done(), "the handler's context is the attempt's, not nil")
		return nil
	})
	in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{Logger: discardLogger(), Observer: o})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Observer: o})
	require.NoError(t, err)

	a := idempotencytest.Deliver(h, invoicePayload(t, "evt_obs_nil_ctx", "in_obs_nil_ctx", "acct_1"), testSecret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)

	require.Len(t, deliveries, 1, "Delivery's done, called once")
	require.Equal(t, idempotency.OutcomeQueued, deliveries[0].Outcome)
	require.Len(t, attempts, 1, "Attempt's done, called once")
	require.Equal(t, idempotency.OutcomeProcessed, attempts[0].Outcome)
}
