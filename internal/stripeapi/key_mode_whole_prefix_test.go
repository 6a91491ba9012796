package stripeapi

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKeyModeReadsTheWholePrefix: a key is a test key only with the whole
// prefix sk_test_ or rk_test_, underscore included: one that only starts
// so ("sk_testx...") names no mode, and is refused plain http to another
// machine as any key that is not a test key is. (No test failed when
// "sk_test" without its underscore was read as a test key, allowed plain
// http anywhere.)
func TestKeyModeReadsTheWholePrefix(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"sk_testverysecret0123456789", "rk_testverysecret0123456789", "sk_test"} {
		require.Empty(t, KeyMode(key), key)
		_, err := NewClient(key, "http://api.example.com", nil)
		be, ok := errors.AsType[*BaseURLError](err)
		require.True(t, ok, "%s: %v", key, err)
		require.True(t, be.plain, "%s: %v", key, err)
	}
	require.Equal(t, "test", KeyMode("sk_test_"))
}
