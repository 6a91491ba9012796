package idempotency_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverAsksAgainAfterA429Or5xx: a page Stripe answers 503, then
// 429, then 500 (stripe-go retries none of them) is asked for again 1, 2
// and 4 s later, and the run finishes: every event applied once, each
// request counted, a warning a retry (neither the key nor Stripe's
// message in it). A 4xx other than 429 is not asked again. On
// testing/synctest's fake clock. Before, the run stopped at the 503 with
// ErrStripeAPI, 2 requests made.
func TestRecoverAsksAgainAfterA429Or5xx(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStripe()
		now := time.Now()
		addPaidEvents(t, f, "retry", 25, now)
		refusals := map[int]int{2: http.StatusServiceUnavailable, 3: http.StatusTooManyRequests, 4: http.StatusInternalServerError}
		f.fail = func(n int, _ *http.Request) int { return refusals[n] }
		app := newService(t, "memory")
		var logs bytes.Buffer
		h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{
			Secrets: []string{testSecret}, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		})
		require.NoError(t, err)
		rep, err := h.Recover(t.Context(), f.inProcess(), idempotency.RecoverOptions{Since: now.Add(-2 * time.Hour), PageSize: 10})
		require.NoError(t, err)
		require.Equal(t, 25, rep.Processed)
		app.requireAppliedOnce(t, eventIDs("retry", 25))

		calls := f.calls()
		require.Len(t, calls, rep.Requests)
		for i, want := range map[int]int{1: 503, 2: 429, 3: 500, 4: 200} {
			require.Equal(t, want, calls[i].Status, "request %d", i+1)
		}
		require.Equal(t, calls[1].Query, calls[4].Query, "the page asked for again is the same")
		require.Equal(t, 100*time.Millisecond, calls[1].At.Sub(calls[0].At), "the pace")
		for i, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
			require.Equal(t, wait, calls[i+2].At.Sub(calls[i+1].At), "retry %d", i+1)
		}
		require.Equal(t, 3, strings.Count(logs.String(), "asking again"), logs.String())
		require.Contains(t, logs.String(), "HTTP 429")
		require.NotContains(t, logs.String(), "injected", "Stripe's message")
		require.NotContains(t, logs.String(), fakeStripeKey)
	})

	// Not a 429 or a 5xx: stopped at once.
	f := newFakeStripe()
	addPaidEvents(t, f, "bad", 5, time.Now())
	f.fail = func(int, *http.Request) int { return http.StatusBadRequest }
	rep, err := newService(t, "memory").handler(t).Recover(t.Context(), f.inProcess(), idempotency.RecoverOptions{Since: time.Now().Add(-2 * time.Hour)})
	require.ErrorIs(t, err, idempotency.ErrStripeAPI)
	require.Equal(t, 1, rep.Requests)
	require.Len(t, f.calls(), 1)
}

// TestRecoverGivesUpAfterFiveRetries: a page Stripe answers 503 every
// time is asked for 6 times in all (1, 2, 4, 8 and 16 s apart), each
// counted, and the run stops with ErrStripeAPI; a ctx that ends while
// Recover waits to ask again stops it at once, with ctx's error and the
// requests made so far. On testing/synctest's fake clock.
func TestRecoverGivesUpAfterFiveRetries(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStripe()
		now := time.Now()
		addPaidEvents(t, f, "down", 5, now)
		f.fail = func(int, *http.Request) int { return http.StatusServiceUnavailable }
		h := newService(t, "memory").handler(t)
		rep, err := h.Recover(t.Context(), f.inProcess(), idempotency.RecoverOptions{Since: now.Add(-2 * time.Hour)})
		require.ErrorIs(t, err, idempotency.ErrStripeAPI)
		require.Equal(t, 6, rep.Requests)
		calls := f.calls()
		require.Len(t, calls, 6)
		for i, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second} {
			require.Equal(t, wait, calls[i+1].At.Sub(calls[i].At), "retry %d", i+1)
		}

		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second) // ends during the wait of 2 s
		defer cancel()
		rep, err = h.Recover(ctx, f.inProcess(), idempotency.RecoverOptions{Since: now.Add(-2 * time.Hour)})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, 2, rep.Requests)
		require.Len(t, f.calls(), 8)
	})
}

// eventIDs are the ids addPaidEvents gives n events of name.
func eventIDs(name string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = paidEventID(name, i)
	}
	return ids
}
