package stripeapi

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHoldsKeyDecodesAnEscapeAtTheEnd: an escape in the last three bytes
// of the text is decoded as any other, so that a key's prefix spelled with
// one there ("sk%5F", "rk%255F") is found, and a '%' too near the end to
// begin one is kept. (No test failed when the last escape was left as it
// is.)
func TestHoldsKeyDecodesAnEscapeAtTheEnd(t *testing.T) {
	t.Parallel()
	require.Equal(t, "sk_", percentDecoded("sk%5F"))
	require.Equal(t, "a%5", percentDecoded("a%5"))
	require.Equal(t, "a%", percentDecoded("a%"))
	for _, s := range []string{"https://api.example.com/?k=sk%5F", "https://api.example.com/?k=rk%255F"} {
		require.True(t, HoldsKey(s, live), s)
	}
}
