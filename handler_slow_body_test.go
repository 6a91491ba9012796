package idempotency_test

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

// TestSlowBodyBoundedByServerReadTimeout: a sender that announces a body
// and trickles it is cut off by the http.Server's ReadTimeout, which the
// README's program sets: the Handler's read fails, the delivery is
// rejected as ErrUnreadableBody and nothing is stored. The Handler bounds
// the body's size; its time is the server's to bound.
func TestSlowBodyBoundedByServerReadTimeout(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
		t.Error("the handler ran")
		return nil
	})
	results := make(chan idempotency.Result, 1)
	h, err := idempotency.NewHandler(store, hs, idempotency.Config{
		Secrets: []string{testSecret}, OnResult: func(r idempotency.Result) { results <- r },
	})
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ReadTimeout = 200 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	payload := eventPayload(t, "invoice.paid", "evt_slow", nil)
	_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		len(payload), payload[:10]) // the rest never comes
	require.NoError(t, err)

	select {
	case res := <-results:
		require.ErrorIs(t, res.Err, idempotency.ErrUnreadableBody)
		require.Equal(t, idempotency.OutcomeRejected, res.Outcome)
	case <-time.After(30 * time.Second):
		t.Fatal("the trickled body was still being read 30 s after the server's 200 ms ReadTimeout")
	}
	_, found, err := store.LookupEvent(t.Context(), "evt_slow")
	require.NoError(t, err)
	require.False(t, found, "a delivery cut off is stored")
}
