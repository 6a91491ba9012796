package eventtypes

import (
	"encoding/json"
	"flag"
	"fmt"
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
	if err != nil {
		msg := fmt.Sprintf("go mod download github.com/stripe/stripe-mock@%s: %v", SpecVersion, err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	var mod struct{ Dir string }
	require.NoError(t, json.Unmarshal(out, &mod))
	b, err := os.ReadFile(filepath.Join(mod.Dir, "embedded", "openapi", "spec3.beta.sdk.json"))
	require.NoError(t, err)
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
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(b, &spec))
	schemas := spec.Components.Schemas
	object := func(ref string) string {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		enum := schemas[name].Properties["object"].Enum
		require.Len(t, enum, 1, "the object of schema %s", name)
		obj, ok := enum[0].(string)
		require.True(t, ok, "the object of schema %s", name)
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
		var list strings.Builder
		for _, w := range want {
			typ, objs, _ := strings.Cut(w, "\x00")
			fmt.Fprintf(&list, "\t{%q, %q},\n", typ, objs)
		}
		src, err := os.ReadFile("objects.go")
		require.NoError(t, err)
		const open = "var objects = [...]struct{ eventType, objects string }{\n"
		head, _, ok := strings.Cut(string(src), open)
		require.True(t, ok, "objects.go has %q", open)
		require.NoError(t, os.WriteFile("objects.go", []byte(head+open+list.String()+"}\n"), 0o644))
		return
	}
	require.Equal(t, want, got, "objects.go: rewrite it with go test ./internal/eventtypes -run TestObjectsMatchStripeMock -update")
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
