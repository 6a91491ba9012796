package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLoggedAPIBaseMasksAPasswordGoReadsAsAPort: a proxy password with a
// '#', '/' or '?' left unescaped makes Go read the text before it as
// host:port when that text is digits, and the rest as a fragment, a path
// or a query. Such a URL was accepted, and the start-up log named it
// whole, password included; it is refused now (a base URL has no path of
// its own), and the error masks what follows the first ':' of the user
// info up to the last '@', as the log line does.
func TestLoggedAPIBaseMasksAPasswordGoReadsAsAPort(t *testing.T) {
	t.Parallel()
	for base, password := range map[string]string{
		"http://ops:12#34@127.0.0.1:8080":  "12#34",
		"http://ops:99/x@127.0.0.1:8080":   "99/x",
		"https://ops:7?pw@127.0.0.1:8080/": "7?pw",
	} {
		_, err := newStripeClient(fakeKey, base)
		require.ErrorContains(t, err, "has a path, query or fragment of its own", base)
		require.NotContains(t, err.Error(), password, base)
		require.Contains(t, err.Error(), "ops:xxxxx@127.0.0.1:8080", base)
		logged := loggedAPIBase(fakeKey, base)
		require.NotContains(t, logged, password, base)
		require.Contains(t, logged, "ops:xxxxx@127.0.0.1:8080", base)
	}
}
