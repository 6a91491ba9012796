package idempotency_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// A preview SDK's types follow one preview version, not a release train:
// with Config.APIVersion a preview version, StrictAPIVersion passes that
// version only, and refuses another preview as a mismatch. (No test
// failed when previews were compared by train, "preview" matching
// "preview".)
func TestHandlerPreviewAPIVersionNeedsTheExactVersion(t *testing.T) {
	t.Parallel()
	requireStrictPassesOnly(t, "2025-09-30.preview", "2025-10-29.preview", "2025-09-30.clover")
}

// requireStrictPassesOnly: with Config.APIVersion set to configured and
// StrictAPIVersion, an event of that version is processed without a
// warning, and one of each other version is refused as a mismatch and not
// stored.
func requireStrictPassesOnly(t *testing.T, configured string, others ...string) {
	t.Helper()
	b := newBench(t, idempotency.Config{APIVersion: configured, StrictAPIVersion: true}, nil)
	requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", withAPIVersion(t, "evt_same", configured), testSecret)),
		200, `{"outcome":"processed"}`)
	require.Equal(t, idempotency.OutcomeProcessed, b.lastResult(t).Outcome)
	for _, other := range others {
		requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", withAPIVersion(t, "evt_"+other, other), testSecret)),
			400, `{"error":"invalid_event"}`)
		require.ErrorIs(t, b.lastResult(t).Err, idempotency.ErrAPIVersionMismatch, other)
		b.requireLedger(t, "evt_"+other, false)
	}
	require.NotContains(t, b.logs.String(), "best-effort", "no warning for the configured version")
}

// withAPIVersion returns the invoice.paid payload as event eventID
// rendered in API version version.
func withAPIVersion(t *testing.T, eventID, version string) []byte {
	t.Helper()
	return withField(t, eventID, func(ev, _ map[string]any) { ev["api_version"] = version })
}
