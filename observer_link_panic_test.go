package idempotency_test

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestObserverLinkPanicLeavesTheHandler: Observer.Link runs in an inbox's
// Handler, on the delivery's goroutine, not on a worker: its panic goes up
// out of ServeHTTP, where net/http drops the connection unanswered (Stripe
// retries) and the process goes on serving. Nothing was stored.
func TestObserverLinkPanicLeavesTheHandler(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
	in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	var panics atomic.Bool
	panics.Store(true)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(),
		Observer: &idempotency.Observer{Link: func(context.Context) string {
			if panics.Load() {
				panic("the Link func's bug")
			}
			return ""
		}}})
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // net/http logs the recovered panic
	srv.Start()
	defer srv.Close()
	client := &http.Client{Timeout: 10 * time.Second}
	post := func(id string) (*http.Response, error) {
		payload := invoicePayload(t, id, "in_"+id, "acct_1")
		req, err := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(payload))
		require.NoError(t, err)
		req.Header.Set("Stripe-Signature", idempotencytest.SignatureHeader(payload, testSecret, time.Now()))
		return client.Do(req)
	}

	_, err = post("evt_link_panics")
	require.Error(t, err, "no answer: the panic left ServeHTTP and net/http dropped the connection")
	_, ok, err := in.Lookup(t.Context(), "evt_link_panics")
	require.NoError(t, err)
	require.False(t, ok, "nothing stored")

	panics.Store(false)
	resp, err := post("evt_link_after")
	require.NoError(t, err, "the process goes on serving")
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
