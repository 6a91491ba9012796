package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRunAttemptTimeoutBoundsTheWorkersAttempts: -attempt-timeout is the
// workers' InboxConfig.Timeout. A receipt email whose provider never
// answers is cut at 10 s, the failed attempt's error naming that timeout
// (the default would cut it at 30 s), and its task's retry (after the
// first backoff, a second) sends it. The retry runs under the same
// timeout: 10 s leaves a busy machine room to send it, where 1 s could
// cut it too.
func TestRunAttemptTimeoutBoundsTheWorkersAttempts(t *testing.T) {
	t.Parallel()
	cut, sent := make(chan struct{}), make(chan struct{})
	var posts atomic.Int32
	mail := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read to its end, the body lets the server see the client hang up.
		_, _ = io.Copy(io.Discard, r.Body)
		switch posts.Add(1) {
		case 1:
			<-r.Context().Done() // the attempt's context, cut at its timeout
			close(cut)
		case 2:
			close(sent)
		}
	}))
	t.Cleanup(mail.Close) // after the server's stop: its attempts are over
	logs := newLogWatch("timed out after 10s (task send-receipt, InboxConfig.Timeout)")
	c := startServerEnv(t, nil, logs, "-mail-url", mail.URL, "-attempt-timeout=10s", "-lease=20s")
	c.deliverAll(idempotency.OutcomeProcessed, invoiceEvent(t, "invoice.paid", "evt_attempt_timeout", "acct_attempt_timeout"))
	for _, step := range []struct {
		what string
		done <-chan struct{}
	}{{"the hung attempt cut", cut}, {"its failure logged", logs.matched}, {"the retry sent", sent}} {
		select {
		case <-step.done:
		case <-time.After(time.Minute):
			require.FailNow(t, step.what+" within a minute", "%s", logs)
		}
	}
}
