package idempotency

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestErrorsMadeByErrorf: the package makes its errors with the prefix
// one way, so that an error wrapping another of its own never repeats
// "idempotency: ": no fmt.Errorf or errors.New with the prefix (or a %w
// first: a sentinel's detail) outside the sentinels, and every sentinel
// made by errors.New with the prefix is listed in sentinels, which
// ownError knows. A format written as a sum (errPrefix + "...") counts as
// its literal would, and fmt or errors imported under another name count
// as themselves. Every type with an Error method is in ownError's type
// switch or in notOwn, so that a new one is a decision, not an omission.
func TestErrorsMadeByErrorf(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	declared := map[string]bool{}   // package-level errors.New("idempotency: ...")
	listed := map[string]bool{}     // the names in sentinels
	errorTypes := map[string]bool{} // the types with an Error method
	ownTypes := map[string]bool{}   // the types in ownError's switch
	// notOwn are the error types whose text is not the package's own:
	// what they wrap is someone else's, or their text has no prefix and
	// is wrapped by errorf where it is returned.
	notOwn := map[string]bool{
		"argsDecodeError":    true, // wrapped by errorf where a task is decoded
		"chainedSessionLost": true, // pgx's error, carried to retry
		"handlerErr":         true, // a handler's error, kept as it is
		"objectKindError":    true, // the Err of a DecodeError, which quotes it
	}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		imported := map[string]string{} // local name -> "fmt" or "errors"
		for _, spec := range f.Imports {
			path, _ := strconv.Unquote(spec.Path.Value)
			if path == "fmt" || path == "errors" {
				local := path
				if spec.Name != nil {
					local = spec.Name.Name
				}
				imported[local] = path
			}
		}
		callee := func(call *ast.CallExpr) string {
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return ""
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok || imported[pkg.Name] == "" {
				return ""
			}
			return imported[pkg.Name] + "." + sel.Sel.Name
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if fd.Recv != nil && fd.Name.Name == "Error" && fd.Type.Params.NumFields() == 0 {
				errorTypes[receiverType(fd.Recv.List[0].Type)] = true
			}
			if fd.Recv == nil && fd.Name.Name == "ownError" {
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					if c, ok := n.(*ast.CaseClause); ok {
						for _, e := range c.List {
							ownTypes[receiverType(e)] = true
						}
					}
					return true
				})
			}
		}
		sentinelCalls := map[ast.Expr]bool{}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, v := range vs.Values {
					name := vs.Names[i].Name
					if name == "sentinels" {
						for _, elt := range v.(*ast.CompositeLit).Elts {
							listed[elt.(*ast.Ident).Name] = true
						}
					}
					if call, ok := v.(*ast.CallExpr); ok && callee(call) == "errors.New" && prefixed(call) {
						declared[name], sentinelCalls[v] = true, true
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || sentinelCalls[call] {
				return true
			}
			switch callee(call) {
			case "fmt.Errorf", "errors.New":
				if format, ok := literal(call); ok && (strings.HasPrefix(format, errPrefix) || strings.HasPrefix(format, "%w")) {
					t.Errorf("%s: %s(%q): make it with errorf", fset.Position(call.Pos()), callee(call), format)
				}
			}
			return true
		})
	}
	require.NotEmpty(t, declared)
	require.Equal(t, declared, listed, "the sentinels made by errors.New, and those listed in sentinels")
	require.NotEmpty(t, ownTypes)
	for name := range errorTypes {
		if !ownTypes[name] && !notOwn[name] {
			t.Errorf("%s has an Error method: add it to ownError's switch if its text is the package's, else to notOwn here", name)
		}
	}
	for name := range notOwn {
		require.False(t, ownTypes[name], "%s is in both ownError and notOwn", name)
		require.True(t, errorTypes[name], "%s in notOwn has no Error method (renamed or gone?)", name)
	}
}

// receiverType is the name of a method's receiver type or a type switch
// case: T for T and *T.
func receiverType(e ast.Expr) string {
	if star, ok := e.(*ast.StarExpr); ok {
		e = star.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// literal is the text call's first argument starts with, as far as it is
// written out: a string literal, errPrefix, or a sum that starts with
// them (errPrefix + "forget: %w").
func literal(call *ast.CallExpr) (string, bool) {
	if len(call.Args) == 0 {
		return "", false
	}
	return leadingText(call.Args[0])
}

func leadingText(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		s, err := strconv.Unquote(e.Value)
		return s, e.Kind == token.STRING && err == nil
	case *ast.Ident:
		return errPrefix, e.Name == "errPrefix"
	case *ast.ParenExpr:
		return leadingText(e.X)
	case *ast.BinaryExpr:
		x, ok := leadingText(e.X)
		if !ok || e.Op != token.ADD {
			return "", false
		}
		if y, ok := leadingText(e.Y); ok {
			return x + y, true
		}
		return x, true
	}
	return "", false
}

func prefixed(call *ast.CallExpr) bool {
	s, ok := literal(call)
	return ok && strings.HasPrefix(s, errPrefix)
}

// TestErrorfUnwrapsAsErrorf: errorf's error unwraps as fmt.Errorf's
// would, one %w to errors.Unwrap, more to Unwrap() []error, quotes an
// error that is not the package's as it is, and does not panic on a typed
// nil of the package's error types.
func TestErrorfUnwrapsAsErrorf(t *testing.T) {
	t.Parallel()
	err := errorf("forget %q: %w", "evt_1", ErrForgetTask)
	require.Same(t, ErrForgetTask, errors.Unwrap(err))
	require.EqualError(t, err, `idempotency: forget "evt_1": a task's id cannot be forgotten: enqueueing its key again would run it again`)

	foreign := errors.New("idempotency: a handler's own text")
	err = errorf("%w: %w", ErrLeaseLost, foreign)
	require.Nil(t, errors.Unwrap(err))
	require.Equal(t, []error{ErrLeaseLost, foreign}, err.(interface{ Unwrap() []error }).Unwrap())
	require.EqualError(t, err, "idempotency: inbox lease lost to a newer attempt: idempotency: a handler's own text")

	err = errorf("no operand")
	require.Nil(t, errors.Unwrap(err))
	require.EqualError(t, err, "idempotency: no operand")

	var typedNil *PermanentError
	err = errorf("%w after 1s: %w", ErrTimeout, error(typedNil))
	require.ErrorIs(t, err, ErrTimeout)
	require.EqualError(t, err, "idempotency: timed out after 1s: <nil>", "fmt's text for a nil receiver; no panic")
}

// TestErrorfKnowsEveryOwnType: every error type of the package, wrapped
// by errorf, is quoted without its prefix, and stays reachable.
func TestErrorfKnowsEveryOwnType(t *testing.T) {
	t.Parallel()
	for _, own := range []error{
		ErrTxDone,
		errorf("made by errorf"),
		errorf("%w: %w", ErrTimeout, ErrTxDone),
		&SkipError{Reason: "refunded by hand"},
		newPanicError("boom"),
		&DecodeError{EventType: "invoice.paid", Target: "*stripe.Invoice", Err: errors.New("decoder")},
		Permanent(nil),
		Snooze(time.Second),
		&deadlockError{},
		&stripeAPIError{op: "retrieving the object", status: 404},
	} {
		err := errorf("context: %w", own)
		require.Equal(t, 1, strings.Count(err.Error(), errPrefix), "%T: %s", own, err)
		require.Equal(t, errPrefix+"context: "+strings.TrimPrefix(own.Error(), errPrefix), err.Error())
		require.ErrorIs(t, err, own)
	}
}
