package dashboard_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestEventHeldByProcessing: the page of an event a worker holds, which
// nothing else holds back, says a worker holds it under a lease, not that
// it is due at its next attempt, which it has none of while processing.
func TestEventHeldByProcessing(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	hs := idempotency.NewHandlers()
	started, release := make(chan struct{}), make(chan struct{})
	idempotency.On(hs, "payout.paid", func(context.Context, idempotency.Tx, idempotency.Event[json.RawMessage]) error {
		close(started)
		<-release
		return nil
	})
	quiet := slog.New(slog.DiscardHandler)
	inbox, err := idempotency.NewInbox(f.store, hs, idempotency.InboxConfig{Now: f.clock.Now, Logger: quiet})
	require.NoError(t, err)
	hook, err := inbox.Handler(idempotency.Config{Secrets: []string{secret}, Logger: quiet})
	require.NoError(t, err)
	payload, err := os.ReadFile("../testdata/stripe-events/payout.paid.json")
	require.NoError(t, err)
	a := idempotencytest.Deliver(hook, payload, secret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	var ev struct{ ID string }
	require.NoError(t, json.Unmarshal(payload, &ev))
	worked := make(chan error, 1)
	go func() {
		_, err := inbox.WorkDue(context.Background())
		worked <- err
	}()
	<-started
	status, body := f.get(t, "event?id="+ev.ID)
	close(release)
	require.NoError(t, <-worked)

	require.Equal(t, http.StatusOK, status, body)
	contains(t, body, `<p class="muted" id="held-by-none">Nothing holds it back: a worker holds it under a lease.</p>`)
	require.Equal(t, idempotency.InboxProcessed, f.state(t, ev.ID))
}
