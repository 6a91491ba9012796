package idempotency_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/readme"
)

// TestReadmeRiverSnippet holds the README's "Already running River?"
// snippet, which is not compiled here (the module does not depend on
// River), to what can be checked without River: it parses as Go once its
// statements are put in a func, it declares the type of every method it
// defines (a user copies the type with the method: a worker declared
// without river.WorkerDefaults is no river.Worker), and every
// idempotency.Name it uses is one the package exports.
func TestReadmeRiverSnippet(t *testing.T) {
	t.Parallel()
	section := readme.Section(t, ".", "Tasks: side effects that must happen once")
	_, river, ok := strings.Cut(section, "\n### Already running River?\n")
	require.True(t, ok, "the README has no section \"Already running River?\"")
	_, snippet, ok := strings.Cut(river, "```go\n")
	require.True(t, ok, "the section has no Go snippet")
	snippet, _, ok = strings.Cut(snippet, "```")
	require.True(t, ok)
	file, err := parser.ParseFile(token.NewFileSet(), "snippet.go", snippetSource(snippet), parser.SkipObjectResolution)
	require.NoError(t, err, "the snippet does not parse as Go")

	types := map[string]bool{}
	var receivers []string
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.TypeSpec:
			types[n.Name.Name] = true
		case *ast.FuncDecl:
			if n.Recv != nil {
				recv := n.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				receivers = append(receivers, recv.(*ast.Ident).Name)
			}
		}
		return true
	})
	require.NotEmpty(t, receivers)
	for _, r := range receivers {
		require.True(t, types[r], "the snippet defines a method of %s without declaring the type", r)
	}

	declared := packageNames(t)
	used := 0
	ast.Inspect(file, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "idempotency" {
				used++
				require.True(t, token.IsExported(sel.Sel.Name) && declared[sel.Sel.Name], "the snippet uses idempotency.%s, which the package does not export", sel.Sel.Name)
			}
		}
		return true
	})
	require.NotZero(t, used)
}

// snippetSource returns a README snippet as the source of a file: its
// top-level declarations as they are, and its other lines, statements and
// comments, in the body of a func.
func snippetSource(snippet string) string {
	decls, stmts := snippetParts(snippet)
	return "package snippet\n\n" + decls + "\nfunc _() {\n" + stmts + "}\n"
}

// snippetParts splits a README snippet into its top-level declarations
// (type, func, var and const at the start of a line, to the closing brace
// or parenthesis at the start of a line) and its other lines, statements
// and comments. Each part keeps the snippet's lines where they are, the
// other part's blank, so that a line of either is the snippet's line.
func snippetParts(snippet string) (decls, stmts string) {
	var d, s strings.Builder
	inDecl := false
	for line := range strings.Lines(snippet) {
		isDecl := inDecl
		switch {
		case inDecl:
			inDecl = line != "}\n" && line != ")\n"
		case strings.HasPrefix(line, "type ") || strings.HasPrefix(line, "func ") ||
			strings.HasPrefix(line, "var ") || strings.HasPrefix(line, "const "):
			isDecl = true
			trimmed := strings.TrimRight(line, "\n")
			inDecl = strings.HasSuffix(trimmed, "{") || strings.HasSuffix(trimmed, "(")
		}
		if isDecl {
			d.WriteString(line)
			s.WriteString("\n")
		} else {
			s.WriteString(line)
			d.WriteString("\n")
		}
	}
	return d.String(), s.String()
}
