package eventtypes

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKnownMatchesStripeGo reads the stripe-go module this project
// builds with and requires known to hold exactly its EventType
// constants and the thin event types of its ConvertRawEvent, sorted: a
// bump of stripe-go in go.mod fails here until the list is brought along.
func TestKnownMatchesStripeGo(t *testing.T) {
	t.Parallel()
	// In package mode, which finds the package in vendor/ as well as in
	// the module cache.
	out, err := exec.Command("go", "list", "-f", "{{.Dir}} {{.Module.Version}}", "github.com/stripe/stripe-go/v82").Output()
	require.NoError(t, err)
	dir, version, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	require.NotEmpty(t, dir)
	require.Equal(t, Version, version, "Version")
	fset := token.NewFileSet()
	var want []string
	events, err := parser.ParseFile(fset, filepath.Join(dir, "event.go"), nil, 0)
	require.NoError(t, err)
	for _, d := range events.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "EventType" {
				continue
			}
			for _, v := range vs.Values {
				s, err := strconv.Unquote(v.(*ast.BasicLit).Value)
				require.NoError(t, err)
				want = append(want, s)
			}
		}
	}
	require.Greater(t, len(want), 200, "EventType constants in %s", dir)
	thin, err := parser.ParseFile(fset, filepath.Join(dir, "v2_events.go"), nil, 0)
	require.NoError(t, err)
	ast.Inspect(thin, func(n ast.Node) bool {
		if fd, ok := n.(*ast.FuncDecl); ok && fd.Name.Name != "ConvertRawEvent" {
			return false
		}
		if cc, ok := n.(*ast.CaseClause); ok {
			for _, e := range cc.List {
				if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					want = append(want, s)
				}
			}
		}
		return true
	})
	require.Contains(t, want, "v1.billing.meter.error_report_triggered")
	slices.Sort(want)
	want = slices.Compact(want)
	require.Equal(t, want, known[:], "known.go: regenerate it from %s", dir)
}

func TestKnown(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"invoice.paid", "checkout.session.completed", "customer.subscription.updated", "v1.billing.meter.error_report_triggered", "invoice_payment.paid"} {
		require.True(t, Known(k), k)
	}
	for _, k := range []string{"invoice.payed", "", "invoice.*", "invoice", "Invoice.paid", "zzz"} {
		require.False(t, Known(k), k)
	}
}

func TestNearest(t *testing.T) {
	t.Parallel()
	for typ, want := range map[string][]string{
		"invoice.payed":                         {"invoice.paid"},
		"checkout.session.complete":             {"checkout.session.completed"},
		"checkout_session.completed":            {"checkout.session.completed"},
		"customer.subscription.update":          {"customer.subscription.updated"},
		"payment_intent.succeded":               {"payment_intent.succeeded"},
		"invoice.payment_succeded":              {"invoice.payment_succeeded"},
		"customer.subscription.created ":        {"customer.subscription.created"},
		"v1.billing.meter.error_report_trigger": {"v1.billing.meter.error_report_triggered"},
		"invoice.finalised":                     {"invoice.finalized"},
		"payment_method.tached":                 {"payment_method.attached", "payment_method.detached"},
		"billing.meter.activated":               {"billing.meter.deactivated", "billing.meter.reactivated"},
		"order.created":                         nil,
		"shop.order.fulfilled":                  nil,
	} {
		require.Equal(t, want, Nearest(typ), typ)
	}
}
