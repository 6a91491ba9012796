package decode

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"
)

// TestStripeObjectMatches: a stripe-go resource type matches the objects
// whose name it is (separators and case aside, a namespace prefix of the
// type's name allowed), and no other; polymorphic stripe-go types, the
// user's own types and untyped ones match every object.
func TestStripeObjectMatches(t *testing.T) {
	t.Parallel()
	type own struct {
		Object string `json:"object"`
	}
	for _, c := range []struct {
		typ     reflect.Type
		kind    string
		matches bool
	}{
		{reflect.TypeFor[*stripe.Invoice](), "invoice", true},
		{reflect.TypeFor[stripe.Invoice](), "invoice", true},
		{reflect.TypeFor[*stripe.CheckoutSession](), "checkout.session", true},
		{reflect.TypeFor[*stripe.PaymentIntent](), "payment_intent", true},
		{reflect.TypeFor[*stripe.TestHelpersTestClock](), "test_helpers.test_clock", true},
		{reflect.TypeFor[*stripe.InvoiceItem](), "invoiceitem", true},
		{reflect.TypeFor[*stripe.TaxID](), "tax_id", true},
		{reflect.TypeFor[*stripe.SigmaScheduledQueryRun](), "scheduled_query_run", true},
		{reflect.TypeFor[*stripe.Invoice](), "", true}, // no "object" sent
		{reflect.TypeFor[*stripe.Customer](), "invoice", false},
		{reflect.TypeFor[*stripe.Invoice](), "invoiceitem", false},
		{reflect.TypeFor[*stripe.Subscription](), "subscription_schedule", false},
		{reflect.TypeFor[*stripe.Account](), "capability", false},
		{reflect.TypeFor[*stripe.PaymentSource](), "card", true},
		{reflect.TypeFor[*stripe.AccountExternalAccount](), "bank_account", true},
		{reflect.TypeFor[*own](), "invoice", true},
		{reflect.TypeFor[map[string]any](), "invoice", true},
		{reflect.TypeFor[json.RawMessage](), "invoice", true},
	} {
		require.Equal(t, c.matches, ObjectMatches(StripeObject(c.typ), c.kind), "%v and %q", c.typ, c.kind)
	}
}
