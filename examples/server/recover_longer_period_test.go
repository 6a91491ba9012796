package main

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/stripemock"
)

// TestRecoverSinceLongerThanAnEarlierStart: a server started with
// -recover-since 2h, then again with -recover-since 240h (the runbook's
// "Stripe disabled the endpoint", a few days later), recovers the longer
// period on the second start. The first run's checkpoint started later
// than the second's -since reaches; it does not stop the recovery.
func TestRecoverSinceLongerThanAnEarlierStart(t *testing.T) {
	t.Parallel()
	apiBase := stripemock.Start(t)
	svc := newStore(t, "postgres")
	api, err := newStripeClient("sk_test_123", apiBase)
	require.NoError(t, err)
	logs := newLogWatch("stripe recovery: done")
	logger := slog.New(slog.NewTextHandler(logs, nil))
	svc.mailer, svc.stripe = newMailer(logger), api
	srv, err := newServer(svc, []string{secret}, logger, false, idempotency.InboxConfig{Logger: logger})
	require.NoError(t, err)

	recoverEvents(t.Context(), srv.webhook, api, 2*time.Hour, logger) // a start with -recover-since 2h
	require.NotContains(t, logs.String(), "recovery stopped", logs.String())
	recoverEvents(t.Context(), srv.webhook, api, 240*time.Hour, logger) // a later start with -recover-since 240h
	require.NotContains(t, logs.String(), "recovery stopped", logs.String())
}
