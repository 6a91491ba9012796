package idempotency_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeProgramBoundsReads: the README's first program serves the
// webhook route, open to anyone, from an http.Server that bounds how long
// a request's headers and its whole body may take to arrive. The Handler
// bounds the body's size, not its time: without the server's timeouts a
// sender that trickles a body holds a connection and a goroutine as long
// as it likes. http.ListenAndServe sets no timeout at all.
func TestReadmeProgramBoundsReads(t *testing.T) {
	t.Parallel()
	file, err := parser.ParseFile(token.NewFileSet(), "main.go", readmeProgram(t), 0)
	require.NoError(t, err)
	require.Equal(t, 1, requireServersBoundReads(t, "the README's program", file), "the program serves from one http.Server")
}

// TestExamplesBoundReads: the examples that serve HTTP, which users copy,
// do it as the README's program does, from an http.Server that bounds
// reads, never with http.ListenAndServe: the dashboard's served its pages
// with it.
func TestExamplesBoundReads(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"example_test.go", "dashboard/example_test.go", "idempotencytest/example_test.go"} {
		file, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		require.NoError(t, err)
		requireServersBoundReads(t, name, file)
	}
}

// requireServersBoundReads fails t when file calls http.ListenAndServe,
// or builds an http.Server without ReadHeaderTimeout or ReadTimeout, and
// returns how many http.Servers it builds.
func requireServersBoundReads(t *testing.T, what string, file *ast.File) int {
	t.Helper()
	servers := 0
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if sel, ok := n.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Server" {
				servers++
				fields := map[string]bool{}
				for _, elt := range n.Elts {
					if kv, ok := elt.(*ast.KeyValueExpr); ok {
						fields[kv.Key.(*ast.Ident).Name] = true
					}
				}
				for _, f := range []string{"ReadHeaderTimeout", "ReadTimeout"} {
					require.True(t, fields[f], "%s: an http.Server sets no %s", what, f)
				}
			}
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == "http" && n.Sel.Name == "ListenAndServe" {
				require.Fail(t, "serves with http.ListenAndServe, which sets no timeout", what)
			}
		}
		return true
	})
	return servers
}
