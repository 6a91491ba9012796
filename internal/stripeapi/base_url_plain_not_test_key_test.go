package stripeapi

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKeyNotForTestOverPlainHTTPRefused: plain http to another machine is
// refused for every key that is not a test key (sk_test_, rk_test_), not
// only for sk_live_ and rk_live_: an organization key (sk_org_) names no
// mode and may be a live one. It was sent to any http URL. The hosts that
// look like this machine's and are not (a subdomain, a user named
// localhost, a DNS name holding 127.0.0.1) are refused too, and this
// machine's spellings of IPv6 loopback go.
func TestKeyNotForTestOverPlainHTTPRefused(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"sk_org_verysecret0123456789", "sk_live_verysecret0123456789"} {
		for _, base := range []string{
			"http://api.example.com",
			"HTTP://api.example.com",
			"http://localhost.example.com",
			"http://127.0.0.1.nip.io",
			"http://localhost@api.example.com",
			"http://localhost:12111@api.example.com",
			"http://api.example.com#@localhost",
			"http://[::ffff:10.0.0.7]:12111",
			"http://0.0.0.0:12111",
		} {
			_, err := NewClient(key, base, nil)
			var be *BaseURLError
			require.True(t, errors.As(err, &be), "%s: %q: %v", key[:7], base, err)
			require.Contains(t, err.Error(), "API key unencrypted", base)
			require.NotContains(t, err.Error(), "verysecret", base)
		}
		for _, base := range []string{"https://api.example.com", "http://localhost:12111",
			"http://[::ffff:127.0.0.1]:12111", "http://[0:0:0:0:0:0:0:1]:12111"} {
			c, err := NewClient(key, base, nil)
			require.NoError(t, err, "%s: %s", key[:7], base)
			require.NotNil(t, c)
		}
	}
}
