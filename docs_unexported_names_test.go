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
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	camel := regexp.MustCompile(`^[a-z]+[A-Z][A-Za-z0-9]*$`)
	names := map[string]bool{}
	add := func(id *ast.Ident) {
		if camel.MatchString(id.Name) {
			names[id.Name] = true
		}
	}
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
					add(d.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						add(s.Name)
					case *ast.ValueSpec:
						for _, n := range s.Names {
							add(n)
						}
					}
				}
			}
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
