package idempotency_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// An empty secret is most often an environment variable that is not set
// (the README's program reads STRIPE_WEBHOOK_SECRET): the error says so,
// and where the secret comes from, rather than only "is empty".
func TestNewHandlerEmptySecretSaysWhatToSet(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", " ", "\n"} {
		_, err := idempotency.NewHandler(idempotency.NewMemoryStore(), idempotency.NewHandlers(),
			idempotency.Config{Secrets: []string{s}})
		require.ErrorContains(t, err, "Config.Secrets[0] is empty", "%q", s)
		require.ErrorContains(t, err, "an environment variable not set?", "%q", s)
		require.ErrorContains(t, err, "whsec_..., from the Dashboard's webhook page or `stripe listen`", "%q", s)
	}
}
