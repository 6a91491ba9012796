package idempotencyotel_test

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	idempotencyotel "github.com/seed-a84bb619/idempotency/otel"
)

// TestTelemetryNotMadeByNewIsRefused: a Telemetry that New did not return
// (a zero or nil one) has no meter, no tracer and no Observer. Observer
// and Pruner panic, and ObserveInbox fails, each naming New: Observer
// gave a nil Observer, which a Config takes as none, so that nothing was
// reported, and ObserveInbox and Pruner panicked on a nil pointer.
func TestTelemetryNotMadeByNewIsRefused(t *testing.T) {
	t.Parallel()
	in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), idempotency.NewHandlers(), idempotency.InboxConfig{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	for name, tel := range map[string]*idempotencyotel.Telemetry{"zero": {}, "nil": nil} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.PanicsWithError(t, "idempotencyotel: Telemetry.Observer: a Telemetry not made by New", func() { tel.Observer() })
			require.PanicsWithError(t, "idempotencyotel: Telemetry.Pruner: a Telemetry not made by New", func() { tel.Pruner(idempotency.NewMemoryStore()) })
			var reg any
			var err error
			require.NotPanics(t, func() { reg, err = tel.ObserveInbox(in) })
			require.EqualError(t, err, "idempotencyotel: Telemetry.ObserveInbox: a Telemetry not made by New")
			require.Nil(t, reg)
		})
	}
}

// TestObserveInboxRefusesAnInboxNotMadeByNewInbox: ObserveInbox refuses
// a nil Inbox and a zero one, which NewInbox did not return, naming
// NewInbox, and registers nothing: it took the zero one, whose Stats
// failed at every collection, each logged at Warn as the store's
// failure, the gauges never reported.
func TestObserveInboxRefusesAnInboxNotMadeByNewInbox(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	tel := newTelemetryConfig(t, idempotencyotel.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for _, c := range []struct {
		in   *idempotency.Inbox
		want string
	}{
		{nil, "idempotencyotel: ObserveInbox: nil *Inbox"},
		{&idempotency.Inbox{}, "idempotencyotel: ObserveInbox: an Inbox not made by idempotency.NewInbox"},
	} {
		reg, err := tel.ObserveInbox(c.in)
		require.EqualError(t, err, c.want)
		require.Nil(t, reg)
	}
	// A gauge registered on the zero Inbox would report no point, its
	// Stats failing at each collection, which logs that failure at Warn.
	tel.points(t)
	require.Empty(t, logs.String(), "no gauge registered: no collection reads the inbox's stats")
}
