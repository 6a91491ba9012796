package stripeapi

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBaseURLErrorQuotesNoPassword: a refused base URL is named in the
// error, but not the password of its user info: a proxy's credentials
// would reach the terminal and the logs of every start.
func TestBaseURLErrorQuotesNoPassword(t *testing.T) {
	t.Parallel()
	for _, base := range []string{
		"ftp://ops:s3cr3t@proxy.example.com", // parses, not http(s)
		"http//ops:s3cr3t@proxy.example.com", // does not parse
		"https://ops:s3cr3t@",                // no host
	} {
		_, err := NewClient("sk_test_123", base, nil)
		var be *BaseURLError
		require.True(t, errors.As(err, &be), "%q: %v", base, err)
		require.NotContains(t, err.Error(), "s3cr3t", "%q", base)
		require.Contains(t, err.Error(), "is not an http(s) URL")
	}
}
