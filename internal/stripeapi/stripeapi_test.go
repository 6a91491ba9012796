package stripeapi

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"
)

func TestNewClient(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"", "pk_test_123", "whsec_123", "xk_live_abc"} {
		_, err := NewClient(key, stripe.APIURL, nil)
		require.ErrorIs(t, err, ErrKey, "%q", key)
		if key != "" {
			require.NotContains(t, err.Error(), key, "the message never names the key")
		}
	}
	for _, base := range []string{"", "localhost:12111", "ftp://example.com", "http://", "://x"} {
		_, err := NewClient("sk_test_123", base, nil)
		var be *BaseURLError
		require.True(t, errors.As(err, &be), "%q: %v", base, err)
		require.Equal(t, base, be.URL)
	}
	for _, base := range []string{stripe.APIURL, "http://127.0.0.1:12111"} {
		c, err := NewClient("rk_test_123", base, nil)
		require.NoError(t, err, base)
		require.NotNil(t, c)
	}
}

// TestKeyMode: the mode is read from a secret or restricted key's prefix
// alone; any other text names none.
func TestKeyMode(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]string{
		"sk_live_abc": "live", "rk_live_abc": "live", "sk_test_abc": "test", "rk_test_abc": "test",
		"pk_live_abc": "", "pk_test_abc": "", "sk_org_abc": "", "sk_livexabc": "", "": "", "whsec_test_abc": "",
	} {
		require.Equal(t, want, KeyMode(key), key)
	}
}
