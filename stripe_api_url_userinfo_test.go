package idempotency_test

import (
	"context"
	"errors"
	"net"
	"net/http"
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
// stored LastError. The user information is now masked whole, as
// http://***@host (it read http://%2A%2A%2A@host). Also in a URL that
// does not parse (a port with a typo, a line end read with it), which
// fails the request before it is sent with an error quoting the whole
// URL, and in one that url.Error's %q escapes (a quote in the host):
// neither was masked.
func TestStripeAPIErrorHidesTheBaseURLsUserinfo(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens: the request fails on the network
	const key = "sk_test_in_the_url_0123456789"
	refused := []string{`"http://***@` + addr + "/v1/subscriptions/sub_1", "connection refused"}
	for name, c := range map[string]struct {
		base string
		hc   *http.Client
		want []string // in the error
	}{
		"user name":                {base: "http://" + key + "@" + addr, want: refused},
		"user name, empty key":     {base: "http://" + key + ":@" + addr, want: refused},
		"password":                 {base: "http://proxy:" + key + "@" + addr, want: refused},
		"port that does not parse": {base: "http://" + key + "@127.0.0.1:12x", want: []string{`"http://***@127.0.0.1:12x/v1/`, "invalid port"}},
		"line end":                 {base: "http://" + key + "@" + addr + "\n", want: []string{`"http://***@` + addr + `\n/v1/`}},
		"quote in the host":        {base: "http://" + key + "@ho\"st", hc: &http.Client{Transport: refusingTransport{}}, want: []string{`"http://***@ho\"st/v1/`}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			client := stripe.NewClient(fakeStripeKey, fakeBackends(c.base, c.hc))
			fetch := idempotency.Retrieve(client.V1Subscriptions.Retrieve)
			_, err := fetch(context.Background(), "sub_1", "")
			require.ErrorIs(t, err, idempotency.ErrStripeAPI)
			require.NotContains(t, err.Error(), key, "the key is not in the error")
			for _, want := range c.want {
				require.Contains(t, err.Error(), want, "the error still names what was requested")
			}
		})
	}
}

// refusingTransport fails every request, as a network that refuses it.
type refusingTransport struct{}

func (refusingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("connection refused")
}
