package idempotency_test

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

// TestStripeAPIErrorHidesTheBaseURLsUserinfo: a network failure's error
// quotes the request's URL, and Go's url.Error hides only a password in
// it. A base URL that carries the API key as its user name, as
// `curl -u sk_...:` puts it (http://sk_test_...@host), put the key in
// every such error, and so in logs, Result.Err and an inbox event's
// stored LastError. The user information is now masked whole.
func TestStripeAPIErrorHidesTheBaseURLsUserinfo(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens: the request fails on the network
	const key = "sk_test_in_the_url_0123456789"
	for name, base := range map[string]string{
		"user name":            "http://" + key + "@" + addr,
		"user name, empty key": "http://" + key + ":@" + addr,
		"password":             "http://proxy:" + key + "@" + addr,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			client := stripe.NewClient(fakeStripeKey, fakeBackends(base, nil))
			fetch := idempotency.Retrieve(client.V1Subscriptions.Retrieve)
			_, err := fetch(context.Background(), "sub_1", "")
			require.ErrorIs(t, err, idempotency.ErrStripeAPI)
			require.NotContains(t, err.Error(), key, "the key is not in the error")
			require.Contains(t, err.Error(), addr+"/v1/subscriptions/sub_1", "the error still names what was requested")
			require.Contains(t, err.Error(), "connection refused")
		})
	}
}
