package main

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunBadCPUProfilePathIsAUsageError: a -cpuprofile file that cannot be
// created is refused before the port is bound, naming the flag, and exits
// 2 as another refused flag does. It exited 1 with the bare error of
// os.Create.
func TestRunBadCPUProfilePathIsAUsageError(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "no-such-dir", "cpu.prof")
	err := runRefused(t, []string{"-secret", secret, "-cpuprofile", bad}, noEnv, io.Discard)
	require.ErrorContains(t, err, "-cpuprofile: ")
	var usage *usageError
	require.ErrorAs(t, err, &usage, "exits 2")
}
