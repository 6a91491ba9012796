package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestThinEventWithoutRelatedObjectSkipReason: an OnCurrent event that
// names no object is skipped with that reason in the ledger, not as an
// object id that is not valid text.
func TestThinEventWithoutRelatedObjectSkipReason(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	idempotency.OnCurrent(app.hs, []string{thinType}, func(context.Context, string, string) (struct{}, error) {
		return struct{}{}, errors.New("no fetch without an object")
	}, func(context.Context, idempotency.Tx, idempotency.Event[struct{}]) error { return nil })
	const id = "evt_thin_no_object"
	notification := fmt.Appendf(nil, `{"id":%q,"object":"v2.core.event","type":%q,"livemode":false,"created":"2024-09-26T17:46:22.134Z"}`, id, thinType)
	f := newFakeStripe()
	f.v2[id] = fmt.Appendf(nil, `{"id":%q,"object":"v2.core.event","type":%q,"livemode":false,"created":"2024-09-26T17:46:22.134Z","data":{},"related_object":null}`, id, thinType)
	h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(), StripeClient: f.serve(t),
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeSkipped, idempotencytest.Deliver(h, notification, testSecret).Outcome)
	rec, found, err := app.store.(ledger).LookupEvent(t.Context(), id)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "the event names no object to fetch", rec.SkipReason)
}

// TestThinEventClientWithoutV2ServiceRefused: NewHandler refuses a client
// whose v2 events service is missing, which every thin event needs.
func TestThinEventClientWithoutV2ServiceRefused(t *testing.T) {
	t.Parallel()
	for name, broken := range map[string]func(c *stripe.Client){
		"service": func(c *stripe.Client) { c.V2CoreEvents = nil },
		"backend": func(c *stripe.Client) { c.V2CoreEvents.B = nil },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			client := newFakeStripe().inProcess()
			broken(client)
			_, err := idempotency.NewHandler(idempotency.NewMemoryStore(), idempotency.NewHandlers(), idempotency.Config{
				Secrets: []string{testSecret}, StripeClient: client,
			})
			require.ErrorContains(t, err, "Config.StripeClient is nil or not made by stripe.NewClient")
		})
	}
}

// TestStripeAPIErrorTokenBound: an error code is quoted when it is an
// identifier (letters, digits, '_', '-', '.') of at most 64 bytes, and
// replaced by a placeholder from 65 bytes on.
func TestStripeAPIErrorTokenBound(t *testing.T) {
	t.Parallel()
	var code string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","code":"` + code + `"}}`))
	}))
	t.Cleanup(srv.Close)
	fetch := idempotency.Retrieve(stripe.NewClient(fakeStripeKey, fakeBackends(srv.URL, nil)).V1Subscriptions.Retrieve)
	for _, c := range []struct {
		code   string
		quoted bool
	}{
		{"parameter.invalid-v2_" + strings.Repeat("a", 64-21), true},
		{strings.Repeat("a", 65), false},
	} {
		code = c.code
		_, err := fetch(t.Context(), "sub_1", "")
		require.ErrorIs(t, err, idempotency.ErrStripeAPI)
		if c.quoted {
			require.Contains(t, err.Error(), "("+c.code+")")
		} else {
			require.NotContains(t, err.Error(), c.code)
			require.Contains(t, err.Error(), "(not an identifier, not quoted)")
		}
	}
}

// TestRetrievePanicReachesTheHandler: a retrieve func that panics panics
// Retrieve's FetchFunc on the caller's goroutine (the Handler recovers it
// as any handler panic, 500), not on a goroutine of its own, and is not
// swallowed into a success.
func TestRetrievePanicReachesTheHandler(t *testing.T) {
	t.Parallel()
	fetch := idempotency.Retrieve(func(context.Context, string, *stripe.SubscriptionRetrieveParams) (*stripe.Subscription, error) {
		panic("retrieve broke")
	})
	require.PanicsWithValue(t, "retrieve broke", func() { _, _ = fetch(t.Context(), "sub_1", "") })
}
