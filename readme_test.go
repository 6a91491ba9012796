package idempotency_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadmeProgramBuilds keeps the README's first program true to the API:
// it is extracted and vetted as a package of this module.
func TestReadmeProgramBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	t.Parallel()
	file := filepath.Join(t.TempDir(), "main.go")
	require.NoError(t, os.WriteFile(file, []byte(readmeProgram(t)), 0o600))
	out, err := exec.Command("go", "vet", file).CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// readmeProgram returns the README's first program, the source of its
// main.go.
func readmeProgram(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(readme), "```go\npackage main\n")
	require.True(t, ok, "the README starts with a complete program")
	program, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	return "package main\n" + program
}

// TestReadmeQuotesAStripeErrorAsLogged: the README quotes the text a
// handler's stripe-go error reads by in the log line, a declined card's,
// as the Handler writes it (the request id aside).
func TestReadmeQuotesAStripeErrorAsLogged(t *testing.T) {
	t.Parallel()
	_, logs := failingHandler(t, func(ctx context.Context) error { return chargeDeclined(ctx, false) })
	var logged string
	for line := range strings.Lines(logs) {
		var rec struct{ Error string }
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if rec.Error != "" {
			logged = rec.Error
		}
	}
	text, ok := strings.CutPrefix(logged, "charging the customer: ")
	require.True(t, ok, "the log line quotes the handler's error: %s", logged)
	text = strings.ReplaceAll(text, "req_declined_1", "req_...")
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	// The README wraps its lines: compare with single spaces.
	require.True(t, strings.Contains(strings.Join(strings.Fields(string(readme)), " "), "`"+text+"`"),
		"the README does not quote the text the log line has: `%s`", text)
}

// TestDocsNameExistingTests: every Test, Benchmark or Example function the
// README or the CHANGELOG cites as the proof of a behaviour exists in the
// module, so that a reader who looks for it finds it.
func TestDocsNameExistingTests(t *testing.T) {
	t.Parallel()
	defined := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Example)[A-Za-z0-9_]*)\(`)
	require.NoError(t, filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir // .git, .ci
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllSubmatch(src, -1) {
			defined[string(m[1])] = true
		}
		return nil
	}))
	cited := regexp.MustCompile("`((?:Test|Benchmark)[A-Z][A-Za-z0-9_]*)`")
	for _, doc := range []string{"README.md", "CHANGELOG.md"} {
		text, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, m := range cited.FindAllSubmatch(text, -1) {
			assert.True(t, defined[string(m[1])], "%s cites %s, which no test file defines", doc, m[1])
		}
	}
}
