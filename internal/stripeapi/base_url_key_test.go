package stripeapi

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBaseURLErrorQuotesNoKey: a refused base URL that holds the API key
// (the key passed as the URL, "-api-base $STRIPE_SECRET_KEY", or as a
// URL's user) is not quoted; the password of a URL's user info is masked.
// The key was echoed whole: it has no password to mask.
func TestBaseURLErrorQuotesNoKey(t *testing.T) {
	t.Parallel()
	const key = "sk_live_verysecret0123456789"
	for base, says := range map[string]string{
		key:                              "holds the API key",
		"ftp://" + key + "@example.com":  "holds the API key",
		"ftp://user:hunter2@example.com": `"ftp://user:xxxxx@example.com"`,
		"localhost:12111":                `"localhost:12111" is not an http(s) URL`,
	} {
		_, err := NewClient(key, base, nil)
		var be *BaseURLError
		require.True(t, errors.As(err, &be), "%q: %v", base, err)
		require.NotContains(t, err.Error(), "hunter2", base)
		require.NotContains(t, err.Error(), "verysecret", base)
		require.Contains(t, err.Error(), says, base)
	}
}
