package stripeapi

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBaseURLErrorQuotesNoEscapedKey: a refused base URL that holds an API
// key percent-encoded, once or twice (a URL escaped again), as a URL may
// hold any of its text, is not quoted: the key was quoted whole, its "sk_"
// spelled "%73k_" or "sk%5F", and then with its "sk_" spelled "%2573k_".
func TestBaseURLErrorQuotesNoEscapedKey(t *testing.T) {
	t.Parallel()
	const key = "sk_live_verysecret0123456789"
	for _, base := range []string{
		"http://%73k_live_verysecret0123456789@proxy.example.com",
		"http://sk%5Flive_verysecret0123456789@proxy.example.com",
		"http://proxy.example.com/?key=rk%5Flive_verysecret0123456789",
		"ftp://%73k_live_verysecret0123456789@proxy.example.com",
		"http://proxy.example.com/?key=%2573k_live_verysecret0123456789",
	} {
		_, err := NewClient(key, base, nil)
		var be *BaseURLError
		require.True(t, errors.As(err, &be), "%q: %v", base, err)
		require.Contains(t, err.Error(), "not quoted: it holds the API key", base)
		require.NotContains(t, err.Error(), "verysecret", base)
	}
}
