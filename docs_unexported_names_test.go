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

// TestGodocNamesNoUnexportedIdentifier: the documentation of each public
// package as go doc shows it names none of that package's unexported
// identifiers (in camelCase, so as not to match English words): a reader
// cannot look one up, and may take it for an exported name (maxAttempts,
// 5, for InboxConfig.MaxAttempts, 20).
func TestGodocNamesNoUnexportedIdentifier(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	t.Parallel()
	camel := regexp.MustCompile(`^[a-z]+[A-Z][A-Za-z0-9]*$`)
	word := regexp.MustCompile(`[A-Za-z0-9]+`)
	for _, dir := range []string{".", "idempotencytest", "otel", "dashboard"} {
		names := map[string]bool{}
		for name := range declaredNames(t, dir) {
			if camel.MatchString(name) {
				names[name] = true
			}
		}
		require.NotEmpty(t, names, dir)
		out, err := exec.Command("go", "doc", "-all", "./"+dir).CombinedOutput()
		require.NoError(t, err, "%s", out)
		for _, line := range strings.Split(string(out), "\n") {
			for _, w := range word.FindAllString(line, -1) {
				assert.False(t, names[w], "go doc of %s names the unexported %s: %s", dir, w, strings.TrimSpace(line))
			}
		}
	}
}

// packageNames returns the names package idempotency declares at the top
// level, exported or not, from its source files.
func packageNames(t *testing.T) map[string]bool {
	t.Helper()
	return declaredNames(t, ".")
}

// declaredNames returns the names the package in dir declares at the top
// level, exported or not, from its source files.
func declaredNames(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
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
