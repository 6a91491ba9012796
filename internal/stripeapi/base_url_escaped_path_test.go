package stripeapi

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBaseURLWithAnEscapedPathOrAnEmptyFragmentRefused: a base URL whose
// path is /v1 percent-encoded (/%76%31), which stripe-go keeps as written
// before each request's /v1, or that ends in a bare '#', after which
// stripe-go appends each request's path as a fragment, is refused as a
// path or fragment of its own; the one-character '#' had been taken, and
// every request of the client failed with "unknown path prefix". (No test
// failed when the path was read decoded.)
func TestBaseURLWithAnEscapedPathOrAnEmptyFragmentRefused(t *testing.T) {
	t.Parallel()
	for _, base := range []string{
		"http://localhost:12111/%76%31",
		"http://localhost:12111#",
		"http://localhost:12111/#",
		"http://localhost:12111/v1#",
	} {
		_, err := NewClient("sk_test_0123456789", base, nil)
		var be *BaseURLError
		require.True(t, errors.As(err, &be), "%q: %v", base, err)
		require.ErrorContains(t, err, "has a path, query or fragment of its own", base)
	}
}
