package idempotency_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// A secret read from an env file that keeps its quotes (docker's
// --env-file, a Kubernetes secret made from such a file) is the secret
// with quotes around it: every signature failed, each delivery answered
// 400 invalid_signature, and nothing said so before the first one. It is
// refused at NewHandler, naming the index and not the secret.
func TestNewHandlerRefusesAQuotedSecret(t *testing.T) {
	t.Parallel()
	for _, s := range []string{`"` + testSecret + `"`, `'` + testSecret + `'`, `"` + testSecret, testSecret + `'`, "`" + testSecret + "`"} {
		_, err := idempotency.NewHandler(idempotency.NewMemoryStore(), idempotency.NewHandlers(),
			idempotency.Config{Secrets: []string{testSecret, s}})
		require.ErrorContains(t, err, "Config.Secrets[1] is in quotes", s)
		require.ErrorContains(t, err, "remove them", s)
		require.NotContains(t, err.Error(), testSecret, "the secret is not quoted in the error")
	}
	_, err := idempotency.NewHandler(idempotency.NewMemoryStore(), idempotency.NewHandlers(),
		idempotency.Config{Secrets: []string{testSecret}})
	require.NoError(t, err)
}
