package idempotency_test

import (
	"testing"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// NewHandler keeps its own copy of Config.Secrets: a caller that reuses
// or clears its slice afterwards (zeroing a secret read from a vault)
// does not change what the Handler verifies with. (No test failed when
// the slice was kept as given.)
func TestHandlerKeepsItsOwnCopyOfSecrets(t *testing.T) {
	t.Parallel()
	secrets := []string{testSecret}
	b := newBench(t, idempotency.Config{Secrets: secrets}, nil)
	secrets[0] = "whsec_changed_after_NewHandler"

	payload := eventPayload(t, "invoice.paid", "evt_secrets_copied", paid)
	requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", payload, testSecret)), 200, `{"outcome":"processed"}`)
	requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", eventPayload(t, "invoice.paid", "evt_secrets_changed", paid), secrets[0])),
		400, `{"error":"invalid_signature"}`)
}
