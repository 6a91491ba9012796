package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLoggedAPIBaseHoldsNoKeyEscapedOrOther: the start-up log leaves out
// a base URL that may hold an API key as the error refusing a base URL
// does: another key than STRIPE_SECRET_KEY, or the key percent-encoded,
// once or twice. Only the key as written was left out; these were logged
// whole (twice encoded, until HoldsKey decoded twice). In a query they
// are refused (a base URL has none), and the error quotes none of them.
func TestLoggedAPIBaseHoldsNoKeyEscapedOrOther(t *testing.T) {
	t.Parallel()
	for _, held := range []string{
		"rk_live_other0123456789",
		"%73k_test_fake_key_never_logged",
		"sk%5Ftest_fake_key_never_logged",
		"%2573k_test_fake_key_never_logged",
	} {
		base := "https://" + held + "@proxy.example.com"
		_, err := newStripeClient(fakeKey, base)
		require.NoError(t, err, "%s is accepted, and logged", base)
		require.Equal(t, "(not logged: it holds the API key)", loggedAPIBase(fakeKey, base), base)

		base = "https://proxy.example.com/?k=" + held
		_, err = newStripeClient(fakeKey, base)
		require.ErrorContains(t, err, "(not quoted: it holds the API key)", base)
		require.NotContains(t, err.Error(), "never_logged", base)
		require.NotContains(t, err.Error(), "other0123456789", base)
	}
}
