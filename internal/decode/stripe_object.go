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
	t, ok := stripeStruct(t)
	if !ok {
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
//
// The suffix is looser than On's check (which names each type's objects
// exactly, from stripe-mock's specification) on purpose: that check has
// run already for the event types it knows, and this one is the only one
// for the others, which may carry an object that no event of that
// specification carries, or one newer than it, whose stripe-go type is
// named otherwise (InvoiceLineItem for "line_item"). Matched exactly, such
// a handler's every event would fail to decode; by suffix, a type that
// only ends like the object's (TreasuryFinancialAccount for "account")
// passes here, for a type On does not know.
func ObjectMatches(want, kind string) bool {
	if want == "" || kind == "" {
		return true
	}
	return strings.HasSuffix(want, strings.ToLower(objectSeparators.Replace(kind)))
}

// WholeEvent reports whether t (a struct, or a pointer to one) is
// stripe-go's type of a whole event rather than of an event's data:
// stripe.Event, stripe.ThinEvent (a thin event's notification),
// stripe.V2BaseEvent (a thin event's own fields), or a type that embeds it
// (stripe.V2RawEvent and the type of each thin event,
// stripe.V1BillingMeterErrorReportTriggeredEvent).
func WholeEvent(t reflect.Type) bool {
	t, ok := stripeStruct(t)
	if !ok {
		return false
	}
	switch t.Name() {
	case "Event", "ThinEvent", "V2BaseEvent":
		return true
	}
	f, ok := t.FieldByName("V2BaseEvent")
	return ok && f.Anonymous && f.Type.PkgPath() == stripeModule && f.Type.Name() == "V2BaseEvent"
}

// stripeStruct returns t, or the type t points to, and whether that is a
// struct of stripe-go.
func stripeStruct(t reflect.Type) (reflect.Type, bool) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t, t.Kind() == reflect.Struct && t.PkgPath() == stripeModule
}
