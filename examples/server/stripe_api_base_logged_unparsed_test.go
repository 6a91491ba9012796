package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLoggedAPIBaseMasksAPasswordGoReadsAsAPort: a proxy password with a
// '#', '/' or '?' left unescaped makes Go read the text before it as
// host:port when that text is digits; the URL is accepted all the same,
// and the start-up log named it whole, password included, where the
// error refusing a bad base URL masks what follows the first ':' of the
// user info up to the last '@'.
func TestLoggedAPIBaseMasksAPasswordGoReadsAsAPort(t *testing.T) {
	t.Parallel()
	for base, password := range map[string]string{
		"http://ops:12#34@127.0.0.1:8080":  "12#34",
		"http://ops:99/x@127.0.0.1:8080":   "99/x",
		"https://ops:7?pw@127.0.0.1:8080/": "7?pw",
	} {
		_, err := newStripeClient(fakeKey, base)
		require.NoError(t, err, "%s is accepted, and logged", base)
		logged := loggedAPIBase(fakeKey, base)
		require.NotContains(t, logged, password, base)
		require.Contains(t, logged, "ops:xxxxx@127.0.0.1:8080", base)
	}
}
