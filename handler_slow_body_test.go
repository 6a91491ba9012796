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
	// ReadTimeout runs from the moment the server begins to read the
	// request, headers included: the headers and the first bytes of the
	// body are written before the server accepts the connection, and
	// ReadTimeout leaves a loaded machine time to read them (200 ms did
	// not: the server timed out on the headers and never called the
	// Handler).
	const readTimeout = 10 * time.Second
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ReadTimeout = readTimeout
	t.Cleanup(srv.Close)
	payload := eventPayload(t, "invoice.paid", "evt_slow", nil)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		len(payload), payload[:10]) // the rest never comes
	require.NoError(t, err)
	srv.Start()

	select {
	case res := <-results:
		require.ErrorIs(t, res.Err, idempotency.ErrUnreadableBody)
		require.Equal(t, idempotency.OutcomeRejected, res.Outcome)
	case <-time.After(readTimeout + time.Minute):
		t.Fatalf("the trickled body was still being read a minute after the server's %s ReadTimeout", readTimeout)
	}
	_, found, err := store.LookupEvent(t.Context(), "evt_slow")
	require.NoError(t, err)
	require.False(t, found, "a delivery cut off is stored")
}
