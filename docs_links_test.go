package idempotency_test

import (
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

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

// TestDocsLinksResolve: every relative link in the README and in docs/
// names a file of the repository, and its #anchor a heading of that file
// as GitHub names it, so that a reader who follows one lands where it
// points, also after a section moves from one file to another.
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	docs, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	for _, doc := range append([]string{"README.md"}, docs...) {
		text, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, target := range markdownLinks(string(text)) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			linked := doc
			if file != "" {
				linked = filepath.Join(filepath.Dir(doc), filepath.FromSlash(file))
				if _, err := os.Stat(linked); err != nil {
					assert.Fail(t, "link to no file", "%s links to %s: %v", doc, target, err)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			body, err := os.ReadFile(linked)
			require.NoError(t, err)
			assert.True(t, markdownAnchors(string(body))[anchor], "%s links to %s, and %s has no such heading", doc, target, linked)
		}
	}
}

var (
	markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpan     = regexp.MustCompile("`[^`]*`")
)

// markdownLinks is the targets of the links in text, outside code blocks
// and code spans.
func markdownLinks(text string) []string {
	var targets []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range markdownLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			targets = append(targets, m[1])
		}
	}
	return targets
}

// markdownAnchors is the anchors GitHub gives the headings of text
// (markdownHeadings).
func markdownAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	for _, h := range markdownHeadings(text) {
		anchors[h.anchor] = true
	}
	return anchors
}

// markdownHeading is a heading line of a Markdown text ("## Retention")
// and the anchor GitHub gives it ("retention").
type markdownHeading struct{ line, anchor string }

// markdownHeadings is the headings of text outside code fences, in
// order, each with its anchor: the heading in lower case, without
// punctuation, spaces made hyphens, and -1, -2... after a repeated one.
func markdownHeadings(text string) []markdownHeading {
	var headings []markdownHeading
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		heading := strings.TrimLeft(line, "#")
		if fenced || len(heading) == len(line) || len(line)-len(heading) > 6 || !strings.HasPrefix(heading, " ") {
			continue
		}
		slug := strings.Map(func(r rune) rune {
			switch {
			case r == ' ':
				return '-'
			case r == '-' || unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.Pc):
				return unicode.ToLower(r)
			}
			return -1
		}, strings.TrimSpace(heading))
		anchor := slug
		if n := seen[slug]; n > 0 {
			anchor = slug + "-" + strconv.Itoa(n)
		}
		seen[slug]++
		headings = append(headings, markdownHeading{line, anchor})
	}
	return headings
}
