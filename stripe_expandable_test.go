package idempotency

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency/internal/decode"
)

// expandableBody is the UnmarshalJSON of a stripe-go expandable resource,
// with the receiver renamed R, the type T and its local alias ALIAS.
const expandableBody = `{
	if id, ok := ParseID(data); ok {
		R.ID = id
		return nil
	}

	type ALIAS T
	var v ALIAS
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}

	*R = T(v)
	return nil
}`

// TestStripeExpandableMatchesSource reads the UnmarshalJSON methods of the
// stripe-go module this project builds with and requires stripeExpandable
// to hold exactly the types whose method has the expandable body.
func TestStripeExpandableMatchesSource(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/stripe/stripe-go/v82").Output()
	require.NoError(t, err, "go list -m github.com/stripe/stripe-go/v82")
	dir := strings.TrimSpace(string(out))
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "stripe-go source in %s", dir)
	fset := token.NewFileSet()
	var want, other []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name != "UnmarshalJSON" || fd.Recv == nil || len(fd.Recv.List[0].Names) == 0 {
				continue
			}
			star, ok := fd.Recv.List[0].Type.(*ast.StarExpr)
			if !ok {
				continue
			}
			typeName := star.X.(*ast.Ident).Name
			var b strings.Builder
			require.NoError(t, printer.Fprint(&b, fset, fd.Body))
			body := b.String()
			for _, st := range fd.Body.List {
				if ds, ok := st.(*ast.DeclStmt); ok {
					if gd, ok := ds.Decl.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
						body = rename(body, gd.Specs[0].(*ast.TypeSpec).Name.Name, "ALIAS")
						break
					}
				}
			}
			body = rename(rename(body, typeName, "T"), fd.Recv.List[0].Names[0].Name, "R")
			if body == expandableBody {
				want = append(want, typeName)
			} else {
				other = append(other, typeName)
			}
		}
	}
	var have []string
	for typ := range stripeExpandable {
		require.Equal(t, "github.com/stripe/stripe-go/v82", typ.PkgPath())
		have = append(have, typ.Name())
	}
	slices.Sort(want)
	slices.Sort(have)
	require.Equal(t, want, have, "stripeExpandable must list exactly the types whose UnmarshalJSON has the expandable body")
	require.Contains(t, other, "PaymentSource", "a polymorphic type must not be listed")
}

func rename(s, from, to string) string {
	return regexp.MustCompile(`\b`+regexp.QuoteMeta(from)+`\b`).ReplaceAllString(s, to)
}

// fixtureObjects returns data.object of every fixture event, by object kind.
func fixtureObjects(t testing.TB) map[string][]byte {
	paths, err := filepath.Glob("testdata/stripe-events/*.json")
	require.NoError(t, err)
	objects := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		var ev struct {
			Data struct {
				Object json.RawMessage `json:"object"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(b, &ev))
		objects[filepath.Base(p)] = ev.Data.Object
	}
	return objects
}

// requireFastSame requires the fast decoder to decode raw into T, and to
// the value json.Unmarshal gives.
func requireFastSame[T any](t *testing.T, raw []byte) {
	t.Helper()
	var got, want T
	require.True(t, decode.New(reflect.TypeFor[T](), isStripeExpandable).Decode(raw, reflect.ValueOf(&got).Elem()), "the fast path gave up")
	require.NoError(t, json.Unmarshal(raw, &want))
	require.True(t, reflect.DeepEqual(want, got), "decoded\n%+v\nwant\n%+v", got, want)
	requireSameDecode[T](t, raw)
}

// TestFastDecodeStripeFixtures: every fixture object decodes on the fast
// path into its stripe-go type, and into the value json.Unmarshal gives.
func TestFastDecodeStripeFixtures(t *testing.T) {
	t.Parallel()
	for name, raw := range fixtureObjects(t) {
		t.Run(name, func(t *testing.T) {
			var kind struct{ Object string }
			require.NoError(t, json.Unmarshal(raw, &kind))
			switch kind.Object {
			case "invoice":
				requireFastSame[*stripe.Invoice](t, raw)
				requireFastSame[stripe.Invoice](t, raw)
			case "charge":
				requireFastSame[*stripe.Charge](t, raw)
			case "checkout.session":
				requireFastSame[*stripe.CheckoutSession](t, raw)
			case "subscription":
				requireFastSame[*stripe.Subscription](t, raw)
			case "payment_intent":
				requireFastSame[*stripe.PaymentIntent](t, raw)
			default:
				t.Fatalf("fixture object %q has no stripe-go type here", kind.Object)
			}
			requireFastSame[map[string]any](t, raw)
			requireFastSame[slimTest](t, raw)
		})
	}
}

// TestFastDecodeExpandedFields: an expanded resource inside an event (a
// customer object instead of its id) decodes as stripe-go decodes it.
func TestFastDecodeExpandedFields(t *testing.T) {
	t.Parallel()
	var obj map[string]any
	require.NoError(t, json.Unmarshal(fixtureObjects(t)["invoice.paid.json"], &obj))
	obj["customer"] = map[string]any{"id": "cus_1", "object": "customer", "email": "x@example.com", "metadata": map[string]any{"a": "b"}}
	obj["subscription"] = nil
	obj["discounts"] = []any{"di_1", map[string]any{"id": "di_2", "object": "discount"}}
	raw, err := json.Marshal(obj)
	require.NoError(t, err)
	requireFastSame[*stripe.Invoice](t, raw)
	var inv *stripe.Invoice
	require.NoError(t, decoderFor[*stripe.Invoice]()(raw, &inv))
	require.Equal(t, "x@example.com", inv.Customer.Email)
	require.Equal(t, "di_1", inv.Discounts[0].ID)
	require.Equal(t, "di_2", inv.Discounts[1].ID)
}

func FuzzDecoderStripeInvoice(f *testing.F) {
	for _, raw := range fixtureObjects(f) {
		f.Add(raw)
	}
	f.Add([]byte(`{"id":"in_1","customer":{"id":"cus_1"},"lines":{"data":[{"id":"il_1","amount":1}]},"total":1}`))
	dec := decoderFor[*stripe.Invoice]()
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // data.object has passed the envelope parser's validation
		}
		var got, want *stripe.Invoice
		gotErr := dec(raw, &got)
		wantErr := json.Unmarshal(raw, &want)
		require.Equal(t, wantErr == nil, gotErr == nil, "errors: %v / %v", gotErr, wantErr)
		if wantErr == nil {
			require.True(t, reflect.DeepEqual(want, got), "decoded\n%+v\nwant\n%+v", got, want)
		}
	})
}
