package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunRefusesAnAPIKeyAsSecretAtOnce: a Stripe API key passed as the
// webhook signing secret is refused before the database is tried, naming
// -secret (exit 2). The Handler refused it once the database was up,
// after up to -db-wait, as Config.Secrets[0].
func TestRunRefusesAnAPIKeyAsSecretAtOnce(t *testing.T) {
	t.Parallel()
	err := refusedBeforeTheDatabase(t, "-secret", secret+",sk_test_not_a_signing_secret")
	require.ErrorContains(t, err, "-secret (or STRIPE_WEBHOOK_SECRET): ")
	require.ErrorContains(t, err, "is a Stripe API key, not a webhook signing secret")
	require.NotContains(t, err.Error(), "sk_test_not")
}
