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
// answers is cut at one second, and its task's retry (after the first
// backoff, a second) sends it, long before the default 30 s would have
// cut the first attempt.
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
	c := startServer(t, "-mail-url", mail.URL, "-attempt-timeout=1s", "-lease=2s")
	c.deliverAll(idempotency.OutcomeProcessed, invoiceEvent(t, "invoice.paid", "evt_attempt_timeout", "acct_attempt_timeout"))
	for _, step := range []struct {
		what string
		done chan struct{}
	}{{"the hung attempt cut", cut}, {"the retry sent", sent}} {
		select {
		case <-step.done:
		case <-time.After(15 * time.Second):
			require.FailNow(t, step.what+" within 15 s")
		}
	}
}
