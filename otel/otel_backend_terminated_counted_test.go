package idempotencyotel_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestBackendTerminatedCountedOnce: the first attempt's PostgreSQL session
// is terminated (pg_terminate_backend) inside its handler, mid-event. The
// attempt rolls back and is recorded failed on another connection; it is
// counted once, failed, and its span ends with Error status and no error
// text. The second attempt applies the event and is counted processed:
// two attempts, as the record shows.
func TestBackendTerminatedCountedOnce(t *testing.T) {
	t.Parallel()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	tel := newTelemetry(t, clock.Now)
	killed := false
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, _ idempotency.Event[json.RawMessage]) error {
		if killed {
			return nil
		}
		killed = true
		_, err := idempotency.PgxTx(tx).Exec(ctx, `SELECT pg_terminate_backend(pg_backend_pid())`)
		return err
	})
	logger := slog.New(slog.DiscardHandler)
	store := idempotencytest.Postgres(t).NewStore(t, idempotency.PgxConfig{})
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: clock.Now, Logger: logger, Observer: tel.Observer()})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{secret}, Now: clock.Now, Logger: logger, Observer: tel.Observer()})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, event(t, "evt_killed", "invoice.paid", "in_killed"), secret).Outcome)

	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	rec, _, err := in.Lookup(t.Context(), "evt_killed")
	require.NoError(t, err)
	require.Equal(t, idempotency.InboxFailed, rec.State, rec.LastError)
	require.Equal(t, map[string]float64{"kind=event,outcome=unavailable,state=failed": 1}, tel.points(t)["idempotency.attempts"])

	clock.Advance(time.Hour)
	n, err = in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	rec, _, err = in.Lookup(t.Context(), "evt_killed")
	require.NoError(t, err)
	require.Equal(t, idempotency.InboxProcessed, rec.State)
	require.Equal(t, 2, rec.Attempt)
	require.Equal(t, map[string]float64{
		"kind=event,outcome=unavailable,state=failed":  1,
		"kind=event,outcome=processed,state=processed": 1,
	}, tel.points(t)["idempotency.attempts"])

	spans := byName(tel.spans.GetSpans(), "process invoice.paid")
	require.Len(t, spans, 2)
	requireClean(t, spans)
	require.Equal(t, codes.Error, spans[0].Status.Code)
	require.Equal(t, "unavailable", spans[0].Status.Description, "the outcome, not the error's text")
	require.Equal(t, codes.Unset, spans[1].Status.Code)
}
