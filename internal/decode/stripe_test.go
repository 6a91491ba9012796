package decode

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
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"
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
// to hold exactly the types whose method has the expandable body. It also
// requires that module to be a version in verifiedStripeVersions, so that
// bumping stripe-go in go.mod fails here until the new source has been
// checked and the version added.
func TestStripeExpandableMatchesSource(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}} {{with .Replace}}{{.Path}}@{{.Version}}{{else}}-{{end}} {{.Dir}}", stripeModule).Output()
	require.NoError(t, err, "go list -m %s", stripeModule)
	version, rest, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	replace, dir, _ := strings.Cut(rest, " ")
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
		require.Equal(t, stripeModule, typ.PkgPath())
		have = append(have, typ.Name())
	}
	slices.Sort(want)
	slices.Sort(have)
	require.Equal(t, want, have, "stripeExpandable must list exactly the types whose UnmarshalJSON has the expandable body")
	require.Contains(t, other, "PaymentSource", "a polymorphic type must not be listed")
	require.Equal(t, "-", replace, "go.mod replaces %s: the bypass is verified against released versions only", stripeModule)
	require.Contains(t, verifiedStripeVersions, version,
		"go.mod pins %s %s, which stripeExpandable has not been verified against: the list matches its source, so add the version to verifiedStripeVersions", stripeModule, version)
}

func rename(s, from, to string) string {
	return regexp.MustCompile(`\b`+regexp.QuoteMeta(from)+`\b`).ReplaceAllString(s, to)
}

// TestStripeVerified: the bypass is on only for a binary that links a
// verified stripe-go, as its build information shows it.
func TestStripeVerified(t *testing.T) {
	t.Parallel()
	pinned := verifiedStripeVersions[0]
	info := func(deps ...*debug.Module) *debug.BuildInfo {
		return &debug.BuildInfo{
			GoVersion: "go1.26.8",
			Path:      "example.com/app",
			Main:      debug.Module{Path: "example.com/app", Version: "(devel)"},
			Deps:      append([]*debug.Module{{Path: "github.com/jackc/pgx/v5", Version: "v5.13.0"}}, deps...),
		}
	}
	stripeAt := func(version string, replace *debug.Module) *debug.Module {
		return &debug.Module{Path: stripeModule, Version: version, Sum: "h1:x", Replace: replace}
	}
	// With a dependency list, the source path does not count.
	cached := "/root/go/pkg/mod/" + stripeModule + "@" + pinned + "/stripe.go"
	for _, tt := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want bool
	}{
		{"the pinned version", info(stripeAt(pinned, nil)), true, true},
		{"a later v82 release", info(stripeAt("v82.6.0", nil)), true, false},
		{"an earlier v82 release", info(stripeAt("v82.5.0", nil)), true, false},
		{"a pseudo-version", info(stripeAt("v82.5.2-0.20251001000000-0123456789ab", nil)), true, false},
		{"replaced by a local directory", info(stripeAt(pinned, &debug.Module{Path: "../stripe-go"})), true, false},
		{"replaced by an absolute directory", info(stripeAt(pinned, &debug.Module{Path: "/src/stripe-go"})), true, false},
		{"replaced by a fork at the pinned version", info(stripeAt(pinned, &debug.Module{Path: "github.com/someone/stripe-go/v82", Version: pinned})), true, false},
		{"replaced by itself at the pinned version", info(stripeAt("v82.6.0", &debug.Module{Path: stripeModule, Version: pinned, Sum: "h1:x"})), true, true},
		{"replaced by itself at a later version", info(stripeAt(pinned, &debug.Module{Path: stripeModule, Version: "v82.6.0"})), true, false},
		{"stripe-go not in the dependencies", info(), true, false},
		{"no build information", nil, false, false},
		{"build information not ok", info(stripeAt(pinned, nil)), false, false},
	} {
		require.Equal(t, tt.want, stripeVerified(tt.info, tt.ok, cached), tt.name)
	}

	// A test binary's build information lists no dependencies: the path
	// of stripe-go's source decides.
	testBinary := &debug.BuildInfo{GoVersion: "go1.26.8", Path: "example.com/app.test", Main: debug.Module{Path: "example.com/app", Version: "(devel)"}}
	for _, tt := range []struct {
		file string
		want bool
	}{
		{cached, true},
		{stripeModule + "@" + pinned + "/stripe.go", true}, // -trimpath
		{"/root/go/pkg/mod/" + stripeModule + "@v82.6.0/stripe.go", false},
		{"/root/go/pkg/mod/" + stripeModule + "@" + pinned + "-0.20251001000000-0123456789ab/stripe.go", false},
		{"/root/go/pkg/mod/github.com/someone/stripe-go/v82@" + pinned + "/stripe.go", false}, // a fork
		{"/home/me/stripe-go/stripe.go", false},                                               // replaced by a directory
		{stripeModule + "/stripe.go", false},                                                  // the same, with -trimpath
		{"/app/vendor/" + stripeModule + "/stripe.go", false},
		{"/root/go/pkg/mod/not" + stripeModule + "@" + pinned + "/stripe.go", false}, // a module whose path ends in stripe-go's, not at a slash
		{"", false},
	} {
		require.Equal(t, tt.want, stripeVerified(testBinary, true, tt.file), tt.file)
	}
	require.False(t, stripeVerified(nil, false, cached), "no build information")
}

// TestStripeBypassInTestBinary: the test binary links the stripe-go that
// go.mod pins, so the tests and benchmarks that go through For run with
// the bypass on, as a user's binary on that version does.
func TestStripeBypassInTestBinary(t *testing.T) {
	t.Parallel()
	info, ok := debug.ReadBuildInfo()
	require.True(t, ok)
	require.True(t, stripeBypass(), "source %s, build information:\n%v", stripeSourceFile(), info)
}

// bypassModes are the two ways For decodes stripe-go's expandable
// resources; every differential test runs both.
var bypassModes = []bool{true, false}

// fixtureObjects returns data.object of every fixture event, by file name,
// as sent.
func fixtureObjects(t testing.TB) map[string][]byte {
	paths, err := filepath.Glob("../../testdata/stripe-events/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
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

// fixtureObject returns a fresh copy of data.object of the named fixture.
func fixtureObject(t testing.TB, name string) map[string]any {
	var obj map[string]any
	require.NoError(t, json.Unmarshal(fixtureObjects(t)[name], &obj))
	require.NotNil(t, obj, name)
	return obj
}

// customerObject is the customer of the fixtures' story as Stripe renders
// an expanded customer. The published fixtures the testdata come from
// hold no customer, so it is built from what the invoice says of its
// customer (id, name, email, address, tax status, created, currency,
// number prefix) and the subscription's payment method.
func customerObject(t testing.TB) map[string]any {
	inv := fixtureObject(t, "invoice.paid.json")
	sub := fixtureObject(t, "customer.subscription.updated.json")
	prefix, _, _ := strings.Cut(inv["number"].(string), "-")
	return map[string]any{
		"id":             inv["customer"],
		"object":         "customer",
		"address":        inv["customer_address"],
		"balance":        0,
		"created":        inv["created"],
		"currency":       inv["currency"],
		"default_source": nil,
		"delinquent":     false,
		"description":    nil,
		"discount":       nil,
		"email":          inv["customer_email"],
		"invoice_prefix": prefix,
		"invoice_settings": map[string]any{
			"custom_fields":          nil,
			"default_payment_method": sub["default_payment_method"],
			"footer":                 nil,
			"rendering_options":      nil,
		},
		"livemode":              false,
		"metadata":              map[string]any{},
		"name":                  inv["customer_name"],
		"next_invoice_sequence": 2,
		"phone":                 inv["customer_phone"],
		"preferred_locales":     []any{},
		"shipping":              nil,
		"tax_exempt":            inv["customer_tax_exempt"],
		"test_clock":            nil,
	}
}

// indented encodes v as Stripe sends objects: indented by two spaces.
func indented(t testing.TB, v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	return b
}

// expandedObjects returns the fixture invoice and subscription with their
// expandable fields in both forms Stripe sends: the bare id, and the full
// object when the request that caused the event expanded it. Keys are
// "kind/form".
func expandedObjects(t testing.TB) map[string][]byte {
	sub := func() map[string]any { return fixtureObject(t, "customer.subscription.updated.json") }
	inv := func() map[string]any { return fixtureObject(t, "invoice.paid.json") }
	setSubscription := func(inv map[string]any, v any) {
		inv["parent"].(map[string]any)["subscription_details"].(map[string]any)["subscription"] = v
	}
	cus := customerObject(t)
	out := map[string][]byte{}

	i := inv()
	i["customer"] = cus["id"]
	setSubscription(i, sub()["id"])
	out["invoice/ids"] = indented(t, i)

	i = inv()
	i["customer"] = cus
	setSubscription(i, sub())
	out["invoice/expanded"] = indented(t, i)

	i = inv()
	i["customer"] = map[string]any{"id": cus["id"], "object": "customer", "deleted": true}
	setSubscription(i, nil)
	out["invoice/deleted-customer"] = indented(t, i)

	s := sub()
	s["customer"] = cus["id"]
	s["latest_invoice"] = inv()["id"]
	out["subscription/ids"] = indented(t, s)

	s = sub()
	s["customer"] = cus
	s["latest_invoice"] = inv()
	out["subscription/expanded"] = indented(t, s)

	// Two levels: the latest invoice's customer and subscription expanded
	// too, the subscription there back to an id.
	i = inv()
	i["customer"] = cus
	setSubscription(i, sub()["id"])
	s = sub()
	s["customer"] = cus
	s["latest_invoice"] = i
	out["subscription/expanded-twice"] = indented(t, s)

	s = sub()
	s["latest_invoice"] = nil
	out["subscription/null-invoice"] = indented(t, s)
	return out
}

// requireFastSame requires the compiled Decoder, with the bypass on or
// off, to decode raw into T without giving up, and to the value
// json.Unmarshal gives; then For's funcs to do the same.
func requireFastSame[T any](t *testing.T, raw []byte) {
	t.Helper()
	var want T
	require.NoError(t, json.Unmarshal(raw, &want))
	for _, bypass := range bypassModes {
		var got T
		require.True(t, New(reflect.TypeFor[T](), expandableFor(bypass)).Decode(raw, reflect.ValueOf(&got).Elem()), "the fast path gave up, bypass %v", bypass)
		require.True(t, reflect.DeepEqual(want, got), "bypass %v: decoded\n%+v\nwant\n%+v", bypass, got, want)
	}
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
			case "account":
				requireFastSame[*stripe.Account](t, raw)
			case "application":
				requireFastSame[*stripe.Application](t, raw)
			case "balance":
				requireFastSame[*stripe.Balance](t, raw)
			case "capability":
				requireFastSame[*stripe.Capability](t, raw)
			case "customer":
				requireFastSame[*stripe.Customer](t, raw)
			case "discount":
				requireFastSame[*stripe.Discount](t, raw)
			case "invoiceitem":
				requireFastSame[*stripe.InvoiceItem](t, raw)
			case "payout":
				requireFastSame[*stripe.Payout](t, raw)
			case "test_helpers.test_clock":
				requireFastSame[*stripe.TestHelpersTestClock](t, raw)
			default:
				t.Fatalf("fixture object %q has no stripe-go type here", kind.Object)
			}
			requireFastSame[map[string]any](t, raw)
			requireFastSame[slimTest](t, raw)
		})
	}
}

// stripeRefs is a struct of the user's own with stripe-go resources as
// fields: with the bypass off, the Decoder decodes it and calls their
// UnmarshalJSON.
type stripeRefs struct {
	ID            string                       `json:"id"`
	Customer      *stripe.Customer             `json:"customer"`
	LatestInvoice *stripe.Invoice              `json:"latest_invoice"`
	Items         *stripe.SubscriptionItemList `json:"items"`
}

// TestFastDecodeExpandedObjects: expandable fields, as ids and as
// expanded objects, decode as stripe-go decodes them, with the bypass on
// and off.
func TestFastDecodeExpandedObjects(t *testing.T) {
	t.Parallel()
	for name, raw := range expandedObjects(t) {
		t.Run(name, func(t *testing.T) {
			if strings.HasPrefix(name, "invoice/") {
				requireFastSame[*stripe.Invoice](t, raw)
				requireFastSame[stripe.Invoice](t, raw)
			} else {
				requireFastSame[*stripe.Subscription](t, raw)
				requireFastSame[stripe.Subscription](t, raw)
				requireFastSame[stripeRefs](t, raw)
			}
			requireFastSame[map[string]any](t, raw)
		})
	}

	// The comparisons above are not vacuous: the objects are there.
	objects := expandedObjects(t)
	for _, bypass := range bypassModes {
		invoice, _ := forBypass[*stripe.Invoice](bypass)
		var inv *stripe.Invoice
		require.NoError(t, invoice(objects["invoice/expanded"], &inv))
		require.Equal(t, "jenny.rosen@example.com", inv.Customer.Email)
		require.Equal(t, "pm_1S2kq1B7WZ01zgkWp5v8Qe2N", inv.Customer.InvoiceSettings.DefaultPaymentMethod.ID)
		require.Equal(t, int64(2000), inv.Parent.SubscriptionDetails.Subscription.Items.Data[0].Price.UnitAmount)
		require.NoError(t, invoice(objects["invoice/ids"], &inv))
		require.Equal(t, "cus_QXg1o8vcGmoR32", inv.Customer.ID)
		require.Empty(t, inv.Customer.Email)
		require.Equal(t, "sub_1Pgc6rB7WZ01zgkWNy0Cn5nw", inv.Parent.SubscriptionDetails.Subscription.ID)

		subscription, _ := forBypass[*stripe.Subscription](bypass)
		var sub *stripe.Subscription
		require.NoError(t, subscription(objects["subscription/expanded-twice"], &sub))
		require.Equal(t, "Jenny Rosen", sub.Customer.Name)
		require.Equal(t, int64(2000), sub.LatestInvoice.Total)
		require.Equal(t, "jenny.rosen@example.com", sub.LatestInvoice.Customer.Email)
		require.NoError(t, subscription(objects["subscription/ids"], &sub))
		require.Equal(t, "in_1Pgc6tB7WZ01zgkWu9fdqL6I", sub.LatestInvoice.ID)
		require.Zero(t, sub.LatestInvoice.Total)
	}
}

// TestFastDecodeExpandedFields: an expanded resource inside an event (a
// customer object instead of its id) decodes as stripe-go decodes it.
func TestFastDecodeExpandedFields(t *testing.T) {
	t.Parallel()
	obj := fixtureObject(t, "invoice.paid.json")
	obj["customer"] = map[string]any{"id": "cus_1", "object": "customer", "email": "x@example.com", "metadata": map[string]any{"a": "b"}}
	obj["subscription"] = nil
	obj["discounts"] = []any{"di_1", map[string]any{"id": "di_2", "object": "discount"}}
	raw, err := json.Marshal(obj)
	require.NoError(t, err)
	requireFastSame[*stripe.Invoice](t, raw)
	for _, bypass := range bypassModes {
		fast, _ := forBypass[*stripe.Invoice](bypass)
		var inv *stripe.Invoice
		require.NoError(t, fast(raw, &inv))
		require.Equal(t, "x@example.com", inv.Customer.Email)
		require.Equal(t, "di_1", inv.Discounts[0].ID)
		require.Equal(t, "di_2", inv.Discounts[1].ID)
	}
}

func FuzzDecoderStripeInvoice(f *testing.F) {
	for _, raw := range fixtureObjects(f) {
		f.Add(raw)
	}
	for _, raw := range expandedObjects(f) {
		f.Add(raw)
	}
	f.Add([]byte(`{"id":"in_1","customer":{"id":"cus_1"},"lines":{"data":[{"id":"il_1","amount":1}]},"total":1}`))
	// A repeated key of a field past the 64th: json.Unmarshal merges the two
	// objects.
	f.Add([]byte(`{"id":"in_1","status_transitions":{"paid_at":1},"status_transitions":{"voided_at":2}}`))
	withBypass, _ := forBypass[*stripe.Invoice](true)
	without, _ := forBypass[*stripe.Invoice](false)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // data.object has passed the envelope parser's validation
		}
		var want *stripe.Invoice
		wantErr := json.Unmarshal(raw, &want)
		for _, dec := range []func([]byte, **stripe.Invoice) error{withBypass, without} {
			var got *stripe.Invoice
			gotErr := dec(raw, &got)
			require.Equal(t, wantErr == nil, gotErr == nil, "errors: %v / %v", gotErr, wantErr)
			if wantErr == nil {
				require.True(t, reflect.DeepEqual(want, got), "decoded\n%+v\nwant\n%+v", got, want)
			}
		}
	})
}
