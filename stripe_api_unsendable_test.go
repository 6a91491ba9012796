package idempotency_test

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/stripeapi"
)

// TestStripeAPIRequestNoLaterOnePasses: a request that fails without an
// answer for a reason no later request passes (the client's base URL
// does not parse or is not http or https, the server redirects without
// end or, for idemctl's client, where its rules refuse to follow, its
// certificate is not accepted) is a refusal, not the network's
// passing failure: Recover stops at its first request, without the
// Warn lines "asking again" of half a minute of retries, and a thin
// event is answered 500, not 503. Before, Recover asked again 5 times
// (31 s), each logged as the Events API refusing the request for now.
func TestStripeAPIRequestNoLaterOnePasses(t *testing.T) {
	t.Parallel()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.String(), http.StatusFound)
	}))
	t.Cleanup(redirecting.Close)
	tlsServer := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsServer.Config.ErrorLog = log.New(io.Discard, "", 0) // its handshakes refused
	tlsServer.StartTLS()
	t.Cleanup(tlsServer.Close)
	clients := map[string]*stripe.Client{}
	for name, base := range map[string]string{
		"URL that does not parse":  "http://stripe.fake:44x3",
		"scheme not http":          "ftp://stripe.fake",
		"redirected without end":   redirecting.URL,
		"certificate not accepted": tlsServer.URL, // the client does not trust httptest's
	} {
		clients[name] = stripe.NewClient(fakeStripeKey, fakeBackends(base, &http.Client{}))
	}
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://stripe.invalid"+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(elsewhere.Close)
	var err error
	clients["redirect refused"], err = stripeapi.NewClient(fakeStripeKey, elsewhere.URL, nil) // to another host
	require.NoError(t, err)
	for name, client := range clients {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			t.Run("Recover", func(t *testing.T) {
				t.Parallel()
				app := newService(t, "memory")
				log, logs := testLogger()
				h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{Secrets: []string{testSecret}, Logger: log})
				require.NoError(t, err)
				rep, err := idempotency.RecoverWithBackoff(t.Context(), h, client,
					idempotency.RecoverOptions{Since: time.Now().Add(-time.Hour), RequestsPerSecond: 100}, time.Millisecond)
				require.ErrorIs(t, err, idempotency.ErrStripeAPI)
				require.Equal(t, 1, rep.Requests, "not asked again: %v", err)
				require.NotContains(t, logs.String(), "asking again")
			})
			t.Run("thin event", func(t *testing.T) {
				t.Parallel()
				app := newService(t, "memory")
				thinEvents(app)
				h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{
					Secrets: []string{testSecret}, Logger: discardLogger(), StripeClient: client,
				})
				require.NoError(t, err)
				notification, _ := thinEvent("evt_thin_unsendable")
				a := idempotencytest.Deliver(h, notification, testSecret)
				require.Equal(t, http.StatusInternalServerError, a.Status, a.Body)
				require.Empty(t, app.appliedCounts(t))
			})
		})
	}
}
