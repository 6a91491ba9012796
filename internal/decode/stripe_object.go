package decode

import (
	"reflect"
	"strings"
)

// StripeObject returns the Stripe object that t (a struct, or a pointer to
// one) is the stripe-go type of, as ObjectMatches compares it: the type's
// name in lower case ("checkoutsession" for stripe.CheckoutSession), or ""
// when t is not a stripe-go resource with a string field Object tagged
// json:"object". Polymorphic types (stripe.PaymentSource,
// stripe.AccountExternalAccount: a card or a bank account) keep the object in a
// field of their own type, and get "": any object is theirs.
func StripeObject(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.PkgPath() != stripeModule {
		return ""
	}
	f, ok := t.FieldByName("Object")
	if !ok || f.Type.Kind() != reflect.String || f.Type.PkgPath() != "" || f.Tag.Get("json") != "object" {
		return ""
	}
	return strings.ToLower(t.Name())
}

// objectSeparators are what a Stripe object's name has and its stripe-go
// type's does not ("checkout.session", "payment_intent").
var objectSeparators = strings.NewReplacer("_", "", ".", "")

// ObjectMatches reports whether data.object's "object", kind, may be
// decoded into the stripe-go type whose StripeObject is want: it is when
// either is empty (not a stripe-go resource, no "object" sent), and when
// want is kind without its separators, in lower case, or ends with it
// (stripe.SigmaScheduledQueryRun is the type of "scheduled_query_run").
func ObjectMatches(want, kind string) bool {
	if want == "" || kind == "" {
		return true
	}
	return strings.HasSuffix(want, strings.ToLower(objectSeparators.Replace(kind)))
}
