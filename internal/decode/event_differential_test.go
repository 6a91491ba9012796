package decode

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency/internal/envelope"
)

// The differential tests here take whole events, as a webhook delivers
// them: the envelope parser's fields are compared with json.Unmarshal of
// the envelope, and data.object, as the parser returns it, is decoded by
// For's funcs (bypass on and off, fast and plain) into the stripe-go
// types handlers register and into users' own types, and compared with
// json.Unmarshal into the same type.

// jsonEnvelope is what json.Unmarshal makes of the envelope fields.
type jsonEnvelope struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Created    int64  `json:"created"`
	APIVersion string `json:"api_version"`
	Livemode   bool   `json:"livemode"`
	Account    string `json:"account"`
	Data       struct {
		Object             json.RawMessage `json:"object"`
		PreviousAttributes json.RawMessage `json:"previous_attributes"`
	} `json:"data"`
}

// userObject is a handler's own type: a few scalar fields, expandable
// stripe-go resources and a nested list.
type userObject struct {
	ID            string                       `json:"id"`
	Object        string                       `json:"object"`
	Customer      *stripe.Customer             `json:"customer"`
	Subscription  *stripe.Subscription         `json:"subscription"`
	LatestInvoice *stripe.Invoice              `json:"latest_invoice"`
	PaymentIntent *stripe.PaymentIntent        `json:"payment_intent"`
	Charge        stripe.Charge                `json:"charge"`
	Items         *stripe.SubscriptionItemList `json:"items"`
	Amount        int64                        `json:"amount"`
	Metadata      map[string]string            `json:"metadata"`
	Created       int64                        `json:"created"`
	Livemode      bool                         `json:"livemode"`
}

// eventFixtures returns every fixture event as sent (the project's shared
// fixtures, copied unchanged into testdata), and the expanded objects
// wrapped in the invoice.paid envelope.
func eventFixtures(t testing.TB) map[string][]byte {
	out := map[string][]byte{}
	paths, err := filepath.Glob("../../testdata/stripe-events/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		out[filepath.Base(p)] = b
	}
	base, err := os.ReadFile("../../testdata/stripe-events/invoice.paid.json")
	require.NoError(t, err)
	for name, obj := range expandedObjects(t) {
		var ev map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(base, &ev))
		ev["data"] = json.RawMessage(`{"object":` + string(obj) + `}`)
		b, err := json.MarshalIndent(ev, "", "  ")
		require.NoError(t, err)
		out["expanded/"+name] = b
	}
	return out
}

// sameAsJSON decodes raw into a T with For's funcs, fast and plain, with
// the bypass on and off, and requires json.Unmarshal's success and, when
// it succeeds, its value. (On an error the handler is not run, so the
// partial value json.Unmarshal leaves does not matter.)
func sameAsJSON[T any](t *testing.T, raw []byte) {
	t.Helper()
	var want T
	wantErr := json.Unmarshal(raw, &want)
	for _, bypass := range bypassModes {
		fast, plain := forBypass[T](bypass)
		for _, path := range []struct {
			name string
			dec  func([]byte, *T) error
		}{{"fast", fast}, {"plain", plain}} {
			var got T
			gotErr := path.dec(raw, &got)
			require.Equal(t, wantErr == nil, gotErr == nil, "%T, %s, bypass %v: errors: %v / %v", got, path.name, bypass, gotErr, wantErr)
			if wantErr == nil {
				require.True(t, reflect.DeepEqual(want, got), "%T, %s, bypass %v: decoded\n%+v\nwant\n%+v", got, path.name, bypass, got, want)
			}
		}
	}
}

// requireObjectDecodes decodes data.object into every type a handler may
// register for it.
func requireObjectDecodes(t *testing.T, raw []byte) {
	t.Helper()
	sameAsJSON[*stripe.Invoice](t, raw)
	sameAsJSON[stripe.Invoice](t, raw)
	sameAsJSON[*stripe.Customer](t, raw)
	sameAsJSON[*stripe.Subscription](t, raw)
	sameAsJSON[*stripe.PaymentIntent](t, raw)
	sameAsJSON[*stripe.Charge](t, raw)
	sameAsJSON[*stripe.CheckoutSession](t, raw)
	sameAsJSON[*stripe.Refund](t, raw)
	sameAsJSON[userObject](t, raw)
	sameAsJSON[*userObject](t, raw)
	sameAsJSON[slimTest](t, raw)
	sameAsJSON[map[string]any](t, raw)
}

// topMembers returns the members of a JSON object in order, duplicates
// included, or nil when raw is not an object.
func topMembers(t testing.TB, raw []byte) (keys []string, vals []json.RawMessage) {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 || raw[0] != '{' {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	_, err := dec.Token()
	require.NoError(t, err)
	for dec.More() {
		tok, err := dec.Token()
		require.NoError(t, err)
		var v json.RawMessage
		require.NoError(t, dec.Decode(&v))
		keys = append(keys, tok.(string))
		vals = append(vals, v)
	}
	return keys, vals
}

// foldedKeys reports whether the event has a key at the levels the
// envelope reads that encoding/json matches to a field case-insensitively
// while the parser, as documented, ignores it.
func foldedKeys(t testing.TB, in []byte) bool {
	folded := func(k string, names ...string) bool {
		for _, n := range names {
			if k != n && strings.EqualFold(k, n) {
				return true
			}
		}
		return false
	}
	keys, vals := topMembers(t, in)
	for i, k := range keys {
		if folded(k, "id", "type", "created", "api_version", "livemode", "account", "data", "object") {
			return true
		}
		if k != "data" {
			continue
		}
		dk, dv := topMembers(t, vals[i])
		for j, k := range dk {
			if folded(k, "object", "previous_attributes") {
				return true
			}
			if k != "object" {
				continue
			}
			ok, _ := topMembers(t, dv[j])
			for _, k := range ok {
				if folded(k, "id", "object") {
					return true
				}
			}
		}
	}
	return false
}

// requireEnvelopeAsJSON requires the parser's fields of a parsed event to
// be json.Unmarshal's.
func requireEnvelopeAsJSON(t *testing.T, in []byte, env envelope.Envelope) {
	t.Helper()
	if foldedKeys(t, in) {
		return
	}
	var want jsonEnvelope
	require.NoError(t, json.Unmarshal(in, &want), "the parser accepted what encoding/json refuses")
	require.Equal(t, want.ID, env.ID, "id")
	require.Equal(t, want.Type, env.Type, "type")
	require.Equal(t, want.Created, env.Created, "created")
	require.Equal(t, want.APIVersion, env.APIVersion, "api_version")
	require.Equal(t, want.Livemode, env.Livemode, "livemode")
	require.Equal(t, want.Account, env.Account, "account")
	require.Equal(t, string(want.Data.Object), string(env.Object), "data.object")
	prev := want.Data.PreviousAttributes
	if string(prev) == "null" {
		prev = nil
	}
	require.Equal(t, string(prev), string(env.Previous), "data.previous_attributes")
	// data.object.id and data.object.object are what encoding/json leaves
	// in a string field, as in the id of the resource a handler is given.
	var obj struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}
	if err := json.Unmarshal(env.Object, &obj); err != nil {
		var typeErr *json.UnmarshalTypeError
		require.ErrorAs(t, err, &typeErr)
	}
	require.Equal(t, obj.ID, env.ObjectID, "data.object.id")
	require.Equal(t, obj.Object, env.ObjectKind, "data.object.object")
}

// TestEventsDecodeAsEncodingJSON: every fixture event's envelope and
// data.object decode as encoding/json decodes them.
func TestEventsDecodeAsEncodingJSON(t *testing.T) {
	t.Parallel()
	for name, in := range eventFixtures(t) {
		t.Run(name, func(t *testing.T) {
			env, err := envelope.Parse(in)
			require.NoError(t, err)
			requireEnvelopeAsJSON(t, in, env)
			requireObjectDecodes(t, env.Object)
		})
	}
}

// FuzzDecodeEvent: for any event the envelope parser accepts, its fields
// are json.Unmarshal's and data.object decodes, into stripe-go's types and
// a user's, as json.Unmarshal decodes it.
func FuzzDecodeEvent(f *testing.F) {
	for _, in := range eventFixtures(f) {
		f.Add(in)
	}
	f.Add([]byte(`{"id":"evt_1","id":"evt_2","type":"invoice.paid","created":1e3,"data":{"object":{"id":"in_1","customer":"cus_1"}}}`))
	f.Add([]byte(`{"\u0069d":"evt_1","type":"t","created":-0,"account":null,"data":{"object":{"id":"in_\u0031","object":"invoice","customer":{"id":"cus_1","object":"customer"}},"previous_attributes":null}}`))
	f.Add([]byte(`{"id":"evt_1","type":"t","data":{"object":{"id":"in_1","object":{"id":"nested"}}},"data":{"previous_attributes":{"a":1}}}`))
	f.Add([]byte(`{"id":"evt_1","type":"t","data":{"object":{"id":"in_1","object":"invoice","id":null,"object":null}}}`))
	f.Add([]byte(`{"id":"evt_1","type":"t","created":9223372036854775807,"data":{"object":{"id":null,"amount":1e2,"created":-9223372036854775808,"customer":null}}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return // FuzzParse covers invalid input
		}
		env, err := envelope.Parse(in)
		if err != nil {
			return
		}
		requireEnvelopeAsJSON(t, in, env)
		requireObjectDecodes(t, env.Object)
	})
}

// FuzzDecodeObject is FuzzDecodeEvent from small objects, which the
// fuzzer mutates faster than whole events: each is data.object of an
// event whose envelope is fixed.
func FuzzDecodeObject(f *testing.F) {
	for _, s := range []string{
		`{"id":"in_1","object":"invoice","customer":"cus_1","amount_due":1,"lines":{"data":[{"id":"il_1","amount":1}]}}`,
		`{"id":"in_1","customer":{"id":"cus_1","object":"customer","email":"a@b","invoice_settings":{"default_payment_method":"pm_1"}}}`,
		`{"id":"sub_1","object":"subscription","customer":"cus_1","latest_invoice":{"id":"in_1","total":5},"items":{"data":[{"price":{"id":"p","unit_amount":1}}]}}`,
		`{"id":"pi_1","object":"payment_intent","latest_charge":{"id":"ch_1","amount":2},"payment_method":"pm_1","last_payment_error":null}`,
		`{"id":"ch_1","object":"charge","refunds":{"data":[{"id":"re_1","charge":"ch_1"}]},"balance_transaction":"txn_1","source":{"id":"card_1","object":"card"}}`,
		`{"id":"cs_1","object":"checkout.session","subscription":"sub_1","customer_details":{"email":"x"},"metadata":{"k":"v"},"discounts":[{"coupon":"c"}]}`,
		`{"id":"cus_1","object":"customer","deleted":true,"metadata":{"a":null},"default_source":{"id":"ba_1","object":"bank_account"}}`,
		`{"ID":"in_2","Customer":"cus_2","amount":"1","created":1e3,"livemode":null,"charge":"ch_1","charge":{"id":"ch_2"}}`,
		`{"id":"in_\u0031","customer":"cus_\u0031","\u0063ustomer":{"id":"x"},"items":null,"metadata":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		in := append(append([]byte(`{"id":"evt_1","object":"event","type":"invoice.paid","data":{"object":`), obj...), "}}"...)
		if !json.Valid(in) {
			return
		}
		env, err := envelope.Parse(in)
		if err != nil {
			return
		}
		requireEnvelopeAsJSON(t, in, env)
		requireObjectDecodes(t, env.Object)
	})
}
