package stripeapi

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLiveKeyOverPlainHTTPRefused: a live key is never sent unencrypted
// over a network: a plain http base URL is refused for it unless it names
// this machine (a local proxy that speaks TLS onward), and the error
// quotes neither the key nor a password. A test key may use plain http to
// any host (a stripe-mock in another container). The live key was sent
// to any http URL.
func TestLiveKeyOverPlainHTTPRefused(t *testing.T) {
	t.Parallel()
	const live = "sk_live_verysecret0123456789"
	for _, base := range []string{
		"http://api.example.com",
		"http://stripe-mock:12111",
		"http://10.0.0.7:12111",
		"http://user:hunter2@proxy.example.com:8080",
		"http://" + live + "@proxy.example.com",
	} {
		for _, key := range []string{live, "rk_live_verysecret0123456789"} {
			_, err := NewClient(key, base, nil)
			var be *BaseURLError
			require.True(t, errors.As(err, &be), "%q: %v", base, err)
			require.Contains(t, err.Error(), "API key unencrypted", base)
			require.NotContains(t, err.Error(), "verysecret", base)
			require.NotContains(t, err.Error(), "hunter2", base)
		}
	}
	for _, base := range []string{"https://api.example.com", "http://localhost:12111", "http://LOCALHOST:12111",
		"http://127.0.0.1:12111", "http://127.8.9.1", "http://[::1]:12111"} {
		c, err := NewClient(live, base, nil)
		require.NoError(t, err, base)
		require.NotNil(t, c)
	}
	for _, base := range []string{"http://stripe-mock:12111", "http://10.0.0.7:12111"} {
		c, err := NewClient("sk_test_123", base, nil)
		require.NoError(t, err, "a test key: %s", base)
		require.NotNil(t, c)
	}
}
