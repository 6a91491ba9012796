package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLoggedAPIBaseHoldsNoKeyEscapedOrOther: the start-up log leaves out
// a base URL that may hold an API key as the error refusing a base URL
// does: another key than STRIPE_SECRET_KEY, or the key percent-encoded,
// once or twice. Only the key as written was left out; these were logged
// whole (twice encoded, until HoldsKey decoded twice).
func TestLoggedAPIBaseHoldsNoKeyEscapedOrOther(t *testing.T) {
	t.Parallel()
	for _, base := range []string{
		"https://proxy.example.com/?k=rk_live_other0123456789",
		"https://%73k_test_fake_key_never_logged@proxy.example.com",
		"https://proxy.example.com/?k=sk%5Ftest_fake_key_never_logged",
		"https://proxy.example.com/?k=%2573k_test_fake_key_never_logged",
	} {
		_, err := newStripeClient(fakeKey, base)
		require.NoError(t, err, "%s is accepted, and logged", base)
		require.Equal(t, "(not logged: it holds the API key)", loggedAPIBase(fakeKey, base), base)
	}
}
