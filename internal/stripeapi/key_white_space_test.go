package stripeapi

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"
)

// TestNewClientRefusesKeyWithWhiteSpace: a key read with its line end (an
// env file, a secret mounted as a file) is refused at once, without
// quoting it, rather than accepted and failing every request with an
// error about the Authorization header.
func TestNewClientRefusesKeyWithWhiteSpace(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"sk_test_123\n", "sk_test_123\r\n", "rk_live_123 ", "sk_test_1\t23", "sk_test_1\x0023"} {
		_, err := NewClient(key, stripe.APIURL, nil)
		require.ErrorIs(t, err, ErrKey, "%q", key)
		require.ErrorContains(t, err, "white space or a control character")
		require.NotContains(t, err.Error(), "_123", "the message never names the key")
	}
}
