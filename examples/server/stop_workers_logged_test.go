package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// heldMailer is an email provider whose answer is held: posted receives
// once a receipt's POST has come, and the POST is answered 200 once
// release is closed, or never, its request cut by the sender.
func heldMailer(t *testing.T) (url string, posted <-chan struct{}, release chan struct{}) {
	t.Helper()
	came := make(chan struct{}, 1)
	release = make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read to its end, the server notices the sender closing the
		// connection (its request's context is done).
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case came <- struct{}{}:
		default: // a retry's
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(ts.Close)
	return ts.URL, came, release
}

// startReceiptAttempt serves run with -mail-url url, delivers a paid
// invoice, and returns once the workers' attempt at its receipt has POSTed
// it: an attempt in flight.
func startReceiptAttempt(t *testing.T, url string, posted <-chan struct{}, logs *logWatch) (stop func() error) {
	t.Helper()
	env := map[string]string{"STRIPE_WEBHOOK_SECRET": secret}
	addr, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-mail-url", url}, func(k string) string { return env[k] }, logs)
	status, body := (client{t: t, url: "http://" + addr}).deliver(invoiceEvent(t, "invoice.paid", "evt_stop_workers", "acct_stop_workers"))
	require.Equal(t, http.StatusOK, status, body)
	select {
	case <-posted:
	case <-time.After(30 * time.Second):
		t.Fatalf("no receipt POSTed within 30 s:\n%s", logs)
	}
	return stop
}

// TestRunStopLogsAnAttemptCutAtItsDeadline: an inbox attempt still in
// flight when the stop's deadline for the workers passes (the email
// provider never answers the receipt's POST) is said in the stopped line,
// in_flight_finished=false, as Inbox.Run answers it: a line before it
// gives Run's error, which counts the one attempt cut. The line was judged
// by the clock, wrong at the deadline's edge.
func TestRunStopLogsAnAttemptCutAtItsDeadline(t *testing.T) {
	old := workersGrace
	workersGrace = 100 * time.Millisecond
	t.Cleanup(func() { workersGrace = old })
	url, posted, _ := heldMailer(t)
	logs := newLogWatch("msg=stopping")
	stop := startReceiptAttempt(t, url, posted, logs)

	require.NoError(t, stop())
	require.Regexp(t, `level=INFO msg=stopping cause="context canceled"\n`+
		`(?:.*\n)*.*level=WARN msg="inbox attempts cut at the stop" error="idempotency: Inbox.Run: attempts still in flight at InboxConfig.ShutdownTimeout cancelled: 1 attempt, 100ms after the stop; each is retried, or dead-lettered at its last attempt"\n`+
		`(?:.*\n)*.*level=INFO msg=stopped took=[0-9.]+m?s in_flight_finished=false\n$`, logs.String())
}

// TestRunStopLogsAnAttemptFinishedInTime: an inbox attempt in flight at
// the stop that ends before the workers' deadline (the provider answers
// once the stop has begun) is said to have finished:
// in_flight_finished=true.
func TestRunStopLogsAnAttemptFinishedInTime(t *testing.T) {
	t.Parallel()
	url, posted, release := heldMailer(t)
	logs := newLogWatch("msg=stopping")
	stop := startReceiptAttempt(t, url, posted, logs)

	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case <-logs.matched:
	case <-time.After(30 * time.Second):
		t.Fatalf("no stop within 30 s:\n%s", logs)
	}
	close(release)
	require.NoError(t, <-stopped)
	require.Regexp(t, `level=INFO msg=stopping cause="context canceled"\n`+
		`(?:.*\n)*.*level=INFO msg="email sent" .*\n(?:.*\n)*.*level=INFO msg=stopped took=[0-9.]+m?s in_flight_finished=true\n$`, logs.String())
}
