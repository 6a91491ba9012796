package main

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRetryStartupBacksOff: the pauses between start-up attempts double
// from firstRetryDelay, each jittered within [d/2, d], as the doc and
// -db-wait's description say.
func TestRetryStartupBacksOff(t *testing.T) {
	t.Parallel()
	logs := newLogWatch(retryLogged)
	// The three pauses checked take 0.7 s at most; the wait leaves a busy
	// machine room for them, where 2 s could end before the third began.
	err := retryStartup(t.Context(), 10*time.Second, slog.New(slog.NewTextHandler(logs, nil)),
		func(context.Context) error { return io.ErrUnexpectedEOF })
	require.ErrorContains(t, err, "giving up")
	pauses := regexp.MustCompile(`retry_in=(\S+)`).FindAllStringSubmatch(logs.String(), -1)
	require.GreaterOrEqual(t, len(pauses), 3, logs.String())
	d := firstRetryDelay
	for i, m := range pauses {
		p, err := time.ParseDuration(m[1])
		require.NoError(t, err)
		require.True(t, p >= d/2 && p <= d, "pause %d is %s, want within [%s, %s]", i+1, p, d/2, d)
		d = min(2*d, maxRetryDelay)
	}
}

// TestRetryStartupBlamesTheAttemptBeforeTheDeadline: when -db-wait's
// deadline cuts the last attempt short, the error given is the attempt
// before's, which says why the database was unavailable, not "context
// deadline exceeded".
func TestRetryStartupBlamesTheAttemptBeforeTheDeadline(t *testing.T) {
	t.Parallel()
	attempts := 0
	// The first attempt and its pause (0.1 s at most) must fit in the
	// wait for a second attempt to begin: 500 ms left a busy machine
	// too little.
	err := retryStartup(t.Context(), 10*time.Second, slog.New(slog.DiscardHandler), func(ctx context.Context) error {
		attempts++
		if attempts == 1 {
			return io.ErrUnexpectedEOF
		}
		<-ctx.Done() // a connection that hangs until the deadline
		return ctx.Err()
	})
	require.Equal(t, 2, attempts)
	require.ErrorContains(t, err, "giving up")
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
}
