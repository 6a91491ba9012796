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
	b := newBench(t, idempotency.Config{APIVersion: "2025-09-30.preview", StrictAPIVersion: true}, nil)
	withVersion := func(eventID, version string) []byte {
		return withField(t, eventID, func(ev, _ map[string]any) { ev["api_version"] = version })
	}

	requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", withVersion("evt_preview_same", "2025-09-30.preview"), testSecret)),
		200, `{"outcome":"processed"}`)
	require.Equal(t, idempotency.OutcomeProcessed, b.lastResult(t).Outcome)
	for _, other := range []string{"2025-10-29.preview", "2025-09-30.clover"} {
		requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", withVersion("evt_preview_"+other, other), testSecret)),
			400, `{"error":"invalid_event"}`)
		require.ErrorIs(t, b.lastResult(t).Err, idempotency.ErrAPIVersionMismatch, other)
		b.requireLedger(t, "evt_preview_"+other, false)
	}
}
