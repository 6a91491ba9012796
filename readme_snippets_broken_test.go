package idempotency_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeSnippetsBuildFailsOnABrokenBlock: the harness of
// TestReadmeSnippetsBuild fails on a README with blocks that do not build
// or do not pass go vet, statements as declarations, a test file as a
// whole program, each reported at its README line under its heading; a
// block that builds is not named. A harness that skipped a block, dropped
// its statements, built instead of vetting, or reported nothing would let
// a broken README block pass.
func TestReadmeSnippetsBuildFailsOnABrokenBlock(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	t.Parallel()
	readme := strings.Join([]string{
		"# A README", // 1
		"",
		"## Fine",
		"",
		"```go", // 5
		`fmt.Println("fine")`,
		"```",
		"",
		"## Statements",
		"", // 10
		"```go",
		"n := 1", // 12: declared and not used
		"```",
		"",
		"## Declarations", // 15
		"",
		"```go",
		"func greet(name string) {",
		`	fmt.Printf("%d\n", name)`, // 19: go vet's printf check
		"}",                         // 20
		"```",
		"",
		"## A test",
		"",
		"```go",                    // 25
		"func ExampleNothing() {}", // 26: go vet's tests check, of a _test.go file
		"```",
		"",
		"## A program",
		"", // 30
		"```go",
		"package main",
		"",
		"func main() {",
		"	var unused int", // 35
		"}",
		"```",
		"",
	}, "\n")
	path := filepath.Join(t.TempDir(), "README.md")
	require.NoError(t, os.WriteFile(path, []byte(readme), 0o600))

	blocks, err := vetReadmeSnippets(t, path)
	require.Len(t, blocks, 5)
	require.Error(t, err)
	// The go command names a file by its path relative to the working
	// directory when that is the shorter (a clone under the same temporary
	// directory as the test's): read both forms as path.
	got := err.Error()
	wd, werr := os.Getwd()
	require.NoError(t, werr)
	if rel, rerr := filepath.Rel(wd, path); rerr == nil && len(rel) < len(path) {
		got = strings.ReplaceAll(got, rel+":", path+":")
	}
	for _, want := range []string{
		"README.md:12, the block ## Statements #1 (no preamble):\n\tvet: " + path + ":12: declared and not used: n\n",
		"README.md:18, the block ## Declarations #1 (no preamble):\n\t" + path + ":19: fmt.Printf format %d has arg name of wrong type string\n",
		"README.md:26, the block ## A test #1 (no preamble):\n\t" + path + ":26: ExampleNothing refers to unknown identifier: Nothing\n",
		"README.md:32, the block ## A program #1 (no preamble):\n\tvet: " + path + ":35: declared and not used: unused\n",
	} {
		require.Contains(t, got, want)
	}
	require.NotContains(t, got, "## Fine")
}
