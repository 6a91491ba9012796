package idempotency_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// clockLines are the records of the clock check logged into logs.
func clockLines(t *testing.T, logs *syncBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if strings.Contains(rec["msg"].(string), "clock") {
			out = append(out, rec)
		}
	}
	return out
}

// Run compares the process's clock with the database's: a clock more than
// a second off is logged at Warn, once, with how far off it is; a clock
// that agrees again is logged at Info; a clock that agrees is not logged.
// The database's clock is read between the inbox's two readings, so the
// amount logged is the skew less up to the check's round trip: the test
// bounds it by the time the check took, which on a busy machine can be
// seconds, and takes skews far beyond the second the check allows.
func TestPgxInboxClockSkewLogged(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	logger, logs := testLogger()
	in, err := idempotency.NewInbox(b.store, idempotency.NewHandlers(), idempotency.InboxConfig{Logger: logger})
	require.NoError(t, err)
	// check compares the clocks once and returns how long that took.
	check := func() time.Duration {
		start := time.Now()
		idempotency.CheckInboxClock(t.Context(), in)
		return time.Since(start)
	}

	check() // the process's own clock
	require.Empty(t, clockLines(t, logs), "a clock that agrees is not logged")

	var skew time.Duration
	idempotency.SetInboxClockCheck(in, func() time.Time { return time.Now().Add(skew) })
	for _, skew = range []time.Duration{900 * time.Millisecond, -900 * time.Millisecond} {
		check()
	}
	require.Empty(t, clockLines(t, logs), "within a second either way")

	skew = 30 * time.Second
	took := check()
	check()
	lines := clockLines(t, logs)
	require.Len(t, lines, 1, "warned once: %s", logs)
	require.Equal(t, "WARN", lines[0]["level"])
	require.Contains(t, lines[0]["msg"], "NTP")
	ahead := time.Duration(lines[0]["ahead"].(float64))
	require.True(t, ahead >= skew-took && ahead <= skew, "ahead %s, skew %s, the check took %s", ahead, skew, took)
	require.Equal(t, float64(0), lines[0]["behind"])
	require.Equal(t, float64(time.Second), lines[0]["bound"])

	skew = 0
	check()
	lines = clockLines(t, logs)
	require.Len(t, lines, 2, logs.String())
	require.Equal(t, "INFO", lines[1]["level"])
	require.Contains(t, lines[1]["msg"], "agrees with the database's again")

	skew = -20 * time.Second
	took = check()
	lines = clockLines(t, logs)
	require.Len(t, lines, 3, logs.String())
	require.Equal(t, "WARN", lines[2]["level"])
	behind := time.Duration(lines[2]["behind"].(float64))
	require.True(t, behind >= -skew-took && behind <= -skew, "behind %s, skew %s, the check took %s", behind, skew, took)
}

// warnHandler signals on its channel the first record at Warn whose
// message has want.
type warnHandler struct {
	slog.Handler
	want string
	seen chan slog.Record
}

func (warnHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h warnHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn && strings.Contains(r.Message, h.want) {
		select {
		case h.seen <- r:
		default:
		}
	}
	return nil
}

// Run checks the clocks as it starts.
func TestPgxInboxRunWarnsOfASkewedClock(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	seen := make(chan slog.Record, 1)
	logger := slog.New(warnHandler{Handler: slog.DiscardHandler, want: "clock differs from the database's", seen: seen})
	in, err := idempotency.NewInbox(b.store, idempotency.NewHandlers(), idempotency.InboxConfig{Logger: logger, PollOnly: true})
	require.NoError(t, err)
	idempotency.SetInboxClockCheck(in, func() time.Time { return time.Now().Add(-2 * time.Minute) })
	stop := runInbox(t, in)
	defer stop()
	recv(t, seen, "the clock warning")
}

// An inbox on a clock of the test's (InboxConfig.Now), or on a store
// without a clock of its own (MemoryStore), compares nothing.
func TestInboxClockCheckLeavesFakeClocksAlone(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	logger, logs := testLogger()
	fake := func() time.Time { return time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC) }
	in, err := idempotency.NewInbox(b.store, idempotency.NewHandlers(), idempotency.InboxConfig{Logger: logger, Now: fake})
	require.NoError(t, err)
	idempotency.CheckInboxClock(t.Context(), in)
	mem, err := idempotency.NewInbox(idempotency.NewMemoryStore(), idempotency.NewHandlers(), idempotency.InboxConfig{Logger: logger})
	require.NoError(t, err)
	idempotency.SetInboxClockCheck(mem, fake)
	idempotency.CheckInboxClock(t.Context(), mem)
	require.Empty(t, clockLines(t, logs), logs.String())
}
