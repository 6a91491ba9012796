package idempotency_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxInboxRunWarnsOfAPoolSmallerThanItsWorkers: each worker holds a
// connection of the store's pool while it applies an event, and Run's
// LISTEN one more; with pgxpool's default (the larger of 4 and the CPUs)
// eight workers ran on three, the others waiting for a connection without
// a word. Run says so once, at Warn, naming both numbers; a pool large
// enough gets no such line.
func TestPgxInboxRunWarnsOfAPoolSmallerThanItsWorkers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		maxConns int32
		pollOnly bool
		warned   bool
	}{
		{"three connections for eight workers", 3, false, true},
		{"eight connections for eight workers and LISTEN", 8, false, true},
		{"nine connections", 9, false, false},
		{"eight connections, polling only", 8, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := newPgBackendWithSettings(t, nil, func(p *pgxpool.Config) { p.MaxConns = c.maxConns })
			var logs bytes.Buffer
			in, err := idempotency.NewInbox(b.store, idempotency.NewHandlers(), idempotency.InboxConfig{
				Workers: 8, PollOnly: c.pollOnly, Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
			})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(t.Context())
			cancel() // Run checks the pool as it starts, then stops at once
			require.NoError(t, in.Run(ctx))
			if !c.warned {
				require.NotContains(t, logs.String(), "MaxConns")
				return
			}
			require.Contains(t, logs.String(), `"level":"WARN"`)
			require.Contains(t, logs.String(), "MaxConns")
			require.Contains(t, logs.String(), `"workers":8`)
			require.Contains(t, logs.String(), `"max_conns":`+map[int32]string{3: "3", 8: "8"}[c.maxConns])
		})
	}
}
