package idempotency_test

import (
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGodocLinksResolve: every doc link ([Name], [Type.Method],
// [pkg.Name]) in what go doc shows of the public packages names something
// that exists, so that pkg.go.dev renders it as a link. go vet does not
// check them: a name misspelt, renamed since or followed by a letter
// ("[Answer]s", which go doc does not take for a link) is shown as plain
// text in brackets.
func TestGodocLinksResolve(t *testing.T) {
	t.Parallel()
	// A candidate starts after a space, a punctuation mark or the line's
	// start: Counts[state] is an index, not a link.
	candidate := regexp.MustCompile(`(?:^|[^\pL\pN_\]])(\[\*?[\pL_][\pL\pN_]*(?:\.[\pL_][\pL\pN_]*)*\])`)
	for _, dir := range []string{".", "idempotencytest", "otel", "dashboard", "cmd/idemctl"} {
		fset := token.NewFileSet()
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		var files []*ast.File
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
			require.NoError(t, err)
			files = append(files, f)
		}
		require.NotEmpty(t, files, dir)
		p, err := doc.NewFromFiles(fset, files, "example.com/"+dir, doc.PreserveAST)
		require.NoError(t, err)
		parse := p.Parser()
		check := func(pos token.Pos, text string) {
			var walk func([]comment.Text)
			walk = func(texts []comment.Text) {
				for _, x := range texts {
					switch x := x.(type) {
					case comment.Plain:
						for _, m := range candidate.FindAllStringSubmatch(string(x), -1) {
							assert.Fail(t, "doc link names nothing", "%s: %s", fset.Position(pos), m[1])
						}
					case *comment.Link:
						walk(x.Text)
					}
				}
			}
			for _, b := range parse.Parse(text).Content {
				switch b := b.(type) {
				case *comment.Paragraph:
					walk(b.Text)
				case *comment.List:
					for _, item := range b.Items {
						for _, c := range item.Content {
							if para, ok := c.(*comment.Paragraph); ok {
								walk(para.Text)
							}
						}
					}
				}
			}
		}
		// What go doc -all shows: the package's doc, and every exported
		// declaration with the comments inside it (fields, constants).
		for _, f := range files {
			if f.Doc != nil {
				check(f.Doc.Pos(), f.Doc.Text())
			}
			for _, d := range f.Decls {
				if !exportedDecl(d) {
					continue
				}
				if cg := declDoc(d); cg != nil {
					check(cg.Pos(), cg.Text())
				}
				if _, ok := d.(*ast.GenDecl); !ok {
					continue // a func's body is not shown
				}
				for _, cg := range f.Comments {
					if cg.Pos() >= d.Pos() && cg.End() <= d.End() {
						check(cg.Pos(), cg.Text())
					}
				}
			}
		}
	}
}

// exportedDecl reports whether go doc shows d: an exported func or
// method of an exported type, or a declaration of an exported name.
func exportedDecl(d ast.Decl) bool {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv != nil && len(d.Recv.List) > 0 {
			typ := d.Recv.List[0].Type
			for {
				switch x := typ.(type) {
				case *ast.StarExpr:
					typ = x.X
					continue
				case *ast.IndexExpr:
					typ = x.X
					continue
				case *ast.IndexListExpr:
					typ = x.X
					continue
				}
				break
			}
			if id, ok := typ.(*ast.Ident); !ok || !id.IsExported() {
				return false
			}
		}
		return d.Name.IsExported()
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() {
					return true
				}
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if n.IsExported() {
						return true
					}
				}
			}
		}
	}
	return false
}

// declDoc is d's doc comment, or nil.
func declDoc(d ast.Decl) *ast.CommentGroup {
	switch d := d.(type) {
	case *ast.FuncDecl:
		return d.Doc
	case *ast.GenDecl:
		return d.Doc
	}
	return nil
}
