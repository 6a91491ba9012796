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
	fields := map[string]bool{}
	listens := false
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if sel, ok := n.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Server" {
				for _, elt := range n.Elts {
					if kv, ok := elt.(*ast.KeyValueExpr); ok {
						fields[kv.Key.(*ast.Ident).Name] = true
					}
				}
			}
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == "http" && n.Sel.Name == "ListenAndServe" {
				listens = true
			}
		}
		return true
	})
	require.False(t, listens, "the program serves with http.ListenAndServe, which sets no timeout")
	for _, f := range []string{"ReadHeaderTimeout", "ReadTimeout"} {
		require.True(t, fields[f], "the program's http.Server sets no %s", f)
	}
}
