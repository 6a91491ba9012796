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
// A base URL without a scheme ("api.stripe.com", stripe-mock's
// "localhost:12111") or with a path of its own (a proxy's prefix;
// stripe-go strips a trailing /v1 alone), whose requests stripe-go fails,
// sent or not, as of a path it does not know, says so, without quoting
// the URL; it read "an answer stripe-go could not read", of an answer
// there never was, and was asked again too.
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
	answering := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"list","data":[],"has_more":false}`))
	}))
	t.Cleanup(answering.Close)
	// The base URLs of stripe-go's "unknown path prefix", not quoted.
	badBase := map[string]string{
		"no scheme":                "api.stripe.com",
		"host and port, no scheme": "localhost:12111", // stripe-mock's address without http://
		"a path of its own":        answering.URL + "/stripe",
	}
	clients := map[string]*stripe.Client{}
	for name, base := range map[string]string{
		"URL that does not parse":  "http://stripe.fake:44x3",
		"scheme not http":          "ftp://stripe.fake",
		"no scheme":                badBase["no scheme"],
		"host and port, no scheme": badBase["host and port, no scheme"],
		"a path of its own":        badBase["a path of its own"],
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
				require.NotContains(t, err.Error(), "could not read", "no answer was read")
				if base, ok := badBase[name]; ok {
					require.ErrorContains(t, err, "the client's base URL is not an http or https URL without a path")
					require.NotContains(t, err.Error(), base, "the URL is not quoted: it may hold a user name")
				}
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
