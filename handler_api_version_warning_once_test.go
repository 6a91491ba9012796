package idempotency_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestAPIVersionWarnedOncePerVersion: events of another release train are
// logged once per version (Config.APIVersion's doc), not once in all: a
// second version, as during a move to a new endpoint version, is named
// too, and a version already named is not named again.
func TestAPIVersionWarnedOncePerVersion(t *testing.T) {
	t.Parallel()
	b := newBench(t, idempotency.Config{}, nil)
	for i, version := range []string{"2025-09-30.clover", "2025-09-30.clover", "2024-06-20", "2025-10-29.clover"} {
		payload := withAPIVersion(t, "evt_v"+string(rune('a'+i)), version)
		requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", payload, testSecret)), 200, `{"outcome":"processed"}`)
	}
	logs := b.logs.String()
	require.Equal(t, 3, strings.Count(logs, "best-effort"), "one warning per version: %s", logs)
	for _, version := range []string{"2025-09-30.clover", "2024-06-20", "2025-10-29.clover"} {
		require.Equal(t, 1, strings.Count(logs, `"api_version":"`+version+`"`), version)
	}
}
