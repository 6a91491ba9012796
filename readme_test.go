package idempotency_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeProgramBuilds keeps the README's first program true to the API:
// it is extracted and vetted as a package of this module.
func TestReadmeProgramBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(readme), "```go\npackage main\n")
	require.True(t, ok, "the README starts with a complete program")
	program, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	file := filepath.Join(t.TempDir(), "main.go")
	require.NoError(t, os.WriteFile(file, []byte("package main\n"+program), 0o600))
	out, err := exec.Command("go", "vet", file).CombinedOutput()
	require.NoError(t, err, "%s", out)
}
