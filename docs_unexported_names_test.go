package idempotency_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGodocNamesNoUnexportedIdentifier: the package's documentation as go
// doc shows it names none of the package's unexported identifiers (in
// camelCase, so as not to match English words): a reader cannot look one
// up, and may take it for an exported name (maxAttempts, 5, for
// InboxConfig.MaxAttempts, 20).
func TestGodocNamesNoUnexportedIdentifier(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	t.Parallel()
	camel := regexp.MustCompile(`^[a-z]+[A-Z][A-Za-z0-9]*$`)
	names := map[string]bool{}
	for name := range packageNames(t) {
		if camel.MatchString(name) {
			names[name] = true
		}
	}
	require.NotEmpty(t, names)
	out, err := exec.Command("go", "doc", "-all", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	word := regexp.MustCompile(`[A-Za-z0-9]+`)
	for _, line := range strings.Split(string(out), "\n") {
		for _, w := range word.FindAllString(line, -1) {
			assert.False(t, names[w], "go doc names the unexported %s: %s", w, strings.TrimSpace(line))
		}
	}
}

// packageNames returns the names package idempotency declares at the top
// level, exported or not, from its source files.
func packageNames(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					names[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						names[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							names[n.Name] = true
						}
					}
				}
			}
		}
	}
	require.NotEmpty(t, names)
	return names
}
