package eventtypes

import (
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/stripemock"
)

var update = flag.Bool("update", false, "rewrite objects.go from stripe-mock's specification")

// generatedBelow starts what -update writes in objects.go.
const generatedBelow = "// Below, what TestObjectsMatchStripeMock -update writes."

// TestObjectsMatchStripeMock reads stripe-mock SpecVersion's OpenAPI
// specification, where each event type's schema (x-stripeEvent) gives
// data.object as a resource, or as one of several, and each resource
// its "object", and requires objects to hold exactly that, sorted. The
// module comes from the module cache, or the Go proxy (go mod
// download); without it the test skips, and fails with CI=true.
func TestObjectsMatchStripeMock(t *testing.T) {
	t.Parallel()
	require.Equal(t, stripemock.Version, SpecVersion, "the specification objects is read from is the stripe-mock the tests run")
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/stripe/stripe-mock@"+SpecVersion).Output()
	var mod struct{ Dir, Error string }
	if jsonErr := json.Unmarshal(out, &mod); err == nil {
		err = jsonErr
	}
	if err != nil || mod.Error != "" {
		var stderr []byte
		if exitErr, ok := err.(*exec.ExitError); ok {
			stderr = exitErr.Stderr
		}
		msg := fmt.Sprintf("go mod download github.com/stripe/stripe-mock@%s: %v %s %s", SpecVersion, err, mod.Error, stderr)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	b, err := os.ReadFile(filepath.Join(mod.Dir, "embedded", "openapi", "spec3.beta.sdk.json"))
	require.NoError(t, err)
	type resource struct {
		Package string `json:"in_package"`
		Class   string `json:"class_name"`
	}
	type property struct {
		Ref   string `json:"$ref"`
		AnyOf []struct {
			Ref string `json:"$ref"`
		} `json:"anyOf"`
		Enum []any `json:"enum"` // strings, or booleans (a flag's)
	}
	var spec struct {
		Components struct {
			Schemas map[string]struct {
				Event *struct {
					Type string `json:"type"`
				} `json:"x-stripeEvent"`
				Properties map[string]property `json:"properties"`
				Resource   resource            `json:"x-stripeResource"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(b, &spec))
	schemas := spec.Components.Schemas
	renamed := map[string]string{} // objects whose stripe-go type is named otherwise
	object := func(ref string) string {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		enum := schemas[name].Properties["object"].Enum
		require.Len(t, enum, 1, "the object of schema %s", name)
		obj, ok := enum[0].(string)
		require.True(t, ok, "the object of schema %s", name)
		res := schemas[name].Resource
		require.NotEmpty(t, res.Class, "the stripe-go type of schema %s", name)
		if goType := strings.ToLower(res.Package + res.Class); goType != plainName(obj) {
			renamed[obj] = goType
		}
		return obj
	}
	var want []string // eventType + "\x00" + objects
	for _, s := range schemas {
		if s.Event == nil {
			continue
		}
		p, ok := s.Properties["object"]
		require.True(t, ok, "event %s has no data.object", s.Event.Type)
		refs := []string{p.Ref}
		if p.Ref == "" {
			refs = nil
			for _, r := range p.AnyOf {
				refs = append(refs, r.Ref)
			}
		}
		require.NotEmpty(t, refs, "event %s's data.object", s.Event.Type)
		var objs []string
		for _, r := range refs {
			objs = append(objs, object(r))
		}
		slices.Sort(objs)
		want = append(want, s.Event.Type+"\x00"+strings.Join(slices.Compact(objs), " "))
	}
	slices.Sort(want)
	require.Greater(t, len(want), 250, "event types in the specification")
	var got []string
	for _, o := range objects {
		got = append(got, o.eventType+"\x00"+o.objects)
	}
	if *update {
		var gen strings.Builder
		gen.WriteString(generatedBelow + `

// goTypes are the objects of events whose stripe-go type's name is not
// the object's name without its separators: the specification's
// x-stripeResource, its package and class.
var goTypes = map[string]string{
`)
		for _, obj := range slices.Sorted(maps.Keys(renamed)) {
			fmt.Fprintf(&gen, "\t%q: %q,\n", obj, renamed[obj])
		}
		gen.WriteString(`}

// objects are the Stripe objects of each event type the specification
// describes, space-separated, sorted by event type.
var objects = [...]struct{ eventType, objects string }{
`)
		for _, w := range want {
			typ, objs, _ := strings.Cut(w, "\x00")
			fmt.Fprintf(&gen, "\t{%q, %q},\n", typ, objs)
		}
		gen.WriteString("}\n")
		src, err := os.ReadFile("objects.go")
		require.NoError(t, err)
		head, _, ok := strings.Cut(string(src), generatedBelow)
		require.True(t, ok, "objects.go has %q", generatedBelow)
		require.NoError(t, os.WriteFile("objects.go", []byte(head+gen.String()), 0o644))
		return
	}
	const rewrite = "objects.go: rewrite it with go test ./internal/eventtypes -run TestObjectsMatchStripeMock -update"
	require.Equal(t, want, got, rewrite)
	require.Equal(t, renamed, goTypes, rewrite)
}

func TestGoType(t *testing.T) {
	t.Parallel()
	for obj, want := range map[string]string{
		"invoice": "invoice", "checkout.session": "checkoutsession", "tax_id": "taxid", "invoiceitem": "invoiceitem",
		"scheduled_query_run": "sigmascheduledqueryrun", "treasury.financial_account": "treasuryfinancialaccount",
	} {
		require.Equal(t, want, GoType(obj), obj)
	}
}

func TestObjects(t *testing.T) {
	t.Parallel()
	for typ, want := range map[string][]string{
		"invoice.paid":                            {"invoice"},
		"customer.subscription.deleted":           {"subscription"},
		"charge.dispute.created":                  {"dispute"},
		"customer.deleted":                        {"customer"},
		"customer.source.created":                 {"bank_account", "card", "source"},
		"checkout.session.completed":              {"checkout.session"},
		"sigma.scheduled_query_run.created":       {"scheduled_query_run"},
		"invoiceitem.created":                     {"invoiceitem"},
		"v1.billing.meter.error_report_triggered": nil, // thin: no data.object
		"invoice.payed":                           nil,
		"":                                        nil,
	} {
		require.Equal(t, want, Objects(typ), typ)
	}
}

// TestObjectsOfTheFixtures: each event of the repository's fixtures
// (testdata/stripe-events, built from Stripe's published fixtures)
// carries one of the objects Objects gives for its type.
func TestObjectsOfTheFixtures(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "stripe-events", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var ev struct {
			Type string `json:"type"`
			Data struct {
				Object struct {
					Object string `json:"object"`
				} `json:"object"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(b, &ev), f)
		require.Contains(t, Objects(ev.Type), ev.Data.Object.Object, f)
	}
}

// TestGoTypesAreStripeGos: the stripe-go this module builds with has a
// resource type (a struct with an Object field tagged json:"object")
// named GoType(o) for each object o of the table that it has a type of
// at all, one whose name ends as o's does: On, which matches the names
// exactly, never refuses stripe-go's own type of an event's object. The
// objects without one are those of preview API versions.
func TestGoTypesAreStripeGos(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "github.com/stripe/stripe-go/v82").Output()
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "*.go"))
	require.NoError(t, err)
	fset := token.NewFileSet()
	resources := map[string]bool{} // lower-case names
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return false
			}
			for _, f := range st.Fields.List {
				if id, ok := f.Type.(*ast.Ident); ok && id.Name == "string" && len(f.Names) == 1 && f.Names[0].Name == "Object" &&
					f.Tag != nil && f.Tag.Value == "`json:\"object\"`" {
					resources[strings.ToLower(ts.Name.Name)] = true
				}
			}
			return false
		})
	}
	require.True(t, resources["invoice"] && resources["sigmascheduledqueryrun"], "stripe-go's resource types")
	checked := 0
	for _, o := range objects {
		for _, obj := range strings.Fields(o.objects) {
			if resources[GoType(obj)] {
				checked++
				continue
			}
			suffix := plainName(obj)
			for r := range resources {
				require.False(t, strings.HasSuffix(r, suffix) && !slices.ContainsFunc(strings.Fields(o.objects), func(other string) bool { return GoType(other) == r }),
					"%s carries %s: stripe-go's %s would be refused, named as GoType does not name it (%s)", o.eventType, obj, r, GoType(obj))
			}
		}
	}
	require.Greater(t, checked, 250)
}
