package idempotency_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/readme"
)

// TestReadmeClaimOldIsTheOneTested: the README's claimOld (Moving a live
// endpoint onto it) is, line for line, the one
// TestHandWrittenReceiverClaimedBothWays runs against a hand-written
// receiver's table, so that the two cannot drift apart:
// TestReadmeSnippetsBuild only compiles the README's.
func TestReadmeClaimOldIsTheOneTested(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("readme_hand_written_receiver_test.go")
	require.NoError(t, err)
	_, fn, ok := strings.Cut(string(src), "\nfunc claimOld")
	require.True(t, ok, "the test's claimOld")
	fn, _, ok = strings.Cut(fn, "\n}\n")
	require.True(t, ok, "the end of the test's claimOld")
	fn = "func claimOld" + fn + "\n}\n"
	require.True(t, strings.Contains(readme.Section(t, ".", "Moving a live endpoint onto it"), fn),
		"the README's claimOld is not, line for line, the test's:\n%s", fn)
}
