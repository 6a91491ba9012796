package stripeapi

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBaseURLWithAPathOfItsOwnRefused: a base URL with a path but /v1, a
// query or a fragment is refused when the client is made, saying what a
// base URL is; stripe-go would fail every request it made ("unknown path
// prefix") and an operator would learn it from the first request of a
// recovery. "/", "/v1" and "/v1/" are what stripe-go trims, and pass.
// (NewClient took them all.)
func TestBaseURLWithAPathOfItsOwnRefused(t *testing.T) {
	t.Parallel()
	const key = "sk_test_0123456789"
	for _, base := range []string{
		"http://localhost:12111/stripe",
		"http://localhost:12111/stripe/v1",
		"http://localhost:12111/v2",
		"http://localhost:12111/v1/events",
		"http://localhost:12111?x=1",
		"http://localhost:12111/?",
		"http://localhost:12111#top",
	} {
		_, err := NewClient(key, base, nil)
		var be *BaseURLError
		require.True(t, errors.As(err, &be), "%q: %v", base, err)
		require.ErrorContains(t, err, "has a path, query or fragment of its own", base)
		require.ErrorContains(t, err, "https://api.stripe.com", base)
	}
	for _, base := range []string{
		"http://localhost:12111", "http://localhost:12111/", "http://localhost:12111/v1", "http://localhost:12111/v1/",
		"https://api.stripe.com",
	} {
		_, err := NewClient(key, base, nil)
		require.NoError(t, err, base)
	}
}

// TestBaseURLWithAPathQuotesNoKey: a refused base URL with a path of its
// own that holds the API key is not quoted.
func TestBaseURLWithAPathQuotesNoKey(t *testing.T) {
	t.Parallel()
	const key = "sk_live_verysecret0123456789"
	_, err := NewClient(key, "https://api.example.com/"+key, nil)
	require.ErrorContains(t, err, "has a path, query or fragment of its own")
	require.ErrorContains(t, err, "not quoted: it holds the API key")
	require.NotContains(t, err.Error(), "verysecret")
}
