package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunLogsNoStripeAPIBasePassword: the start-up line naming
// -stripe-api-base masks the password of its user info (a proxy's), and
// leaves out a base URL that holds the key, as the error refusing a bad
// base URL does. It was logged whole, on every start.
func TestRunLogsNoStripeAPIBasePassword(t *testing.T) {
	t.Parallel()
	api := newFakeStripe(t)
	base := strings.Replace(api.srv.URL, "http://", "http://ops:s3cr3t@", 1)
	stderr := newLogWatch("stripe_api=")
	startServerEnv(t, map[string]string{"STRIPE_SECRET_KEY": fakeKey}, stderr, "-stripe-api-base", base)
	log := stderr.String()
	require.Contains(t, log, "stripe_api=http://ops:xxxxx@"+strings.TrimPrefix(api.srv.URL, "http://"), log)
	require.NotContains(t, log, "s3cr3t")

	stderr = newLogWatch("stripe_api=")
	startServerEnv(t, map[string]string{"STRIPE_SECRET_KEY": fakeKey}, stderr, "-stripe-api-base", strings.Replace(api.srv.URL, "http://", "http://"+fakeKey+"@", 1))
	log = stderr.String()
	require.Contains(t, log, `stripe_api="(not logged: it holds the API key)"`, log)
	require.NotContains(t, log, fakeKey)
}
